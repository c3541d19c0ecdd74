// Parsers behind the host checks: literal kernel text in, values out; garbage never crashes.
#include "common/host_parse.h"

#include <catch2/catch.hpp>
#include <string>

#include "preflight/host_parse.h"

using namespace sl;
using namespace sl::preflight;

namespace {

// /proc/self/limits exactly as fs/proc/base.c prints it (captured from a Linux 6.x node).
const char* kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max stack size            8388608              unlimited            bytes     \n"
    "Max open files            1024                 524288               files     \n"
    "Max locked memory         65536                65536                bytes     \n"
    "Max nice priority         0                    0                    \n"
    "Max realtime timeout      unlimited            unlimited            us        \n";

std::string Config(std::size_t size, std::uint16_t acs_ctrl, bool with_acs = true) {
  std::string c(4096, '\0');
  c[0] = '\x86';
  c[1] = '\x80';
  c[2] = '\x2a';
  c[3] = '\x35';
  // AER at 0x100 -> next 0x148 (or 0), ACS at 0x148.
  std::uint32_t aer = 0x0001 | (2u << 16) | ((with_acs ? 0x148u : 0u) << 20);
  for (int i = 0; i < 4; ++i) c[0x100 + i] = static_cast<char>((aer >> (8 * i)) & 0xff);
  if (with_acs) {
    std::uint32_t hdr = 0x000D | (1u << 16);
    for (int i = 0; i < 4; ++i) c[0x148 + i] = static_cast<char>((hdr >> (8 * i)) & 0xff);
    c[0x14c] = 0x5f;
    c[0x14e] = static_cast<char>(acs_ctrl & 0xff);
    c[0x14f] = static_cast<char>(acs_ctrl >> 8);
  }
  return c.substr(0, size);
}

}  // namespace

TEST_CASE("limits rows are parsed from the right, units optional") {
  auto rows = ParseProcLimits(kLimits);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 6);
  CHECK((*rows)[0].name == "Max cpu time");
  CHECK((*rows)[0].soft == kUnlimited);
  CHECK((*rows)[2].soft == 1024);
  CHECK((*rows)[2].hard == 524288);
  CHECK((*rows)[2].units == "files");
  CHECK((*rows)[4].name == "Max nice priority");
  CHECK((*rows)[4].units.empty());
  auto memlock = FindLimit(kLimits, "Max locked memory");
  REQUIRE(memlock.ok());
  CHECK(memlock->soft == 65536);
  CHECK(memlock->raw.find("65536") != std::string::npos);
}

TEST_CASE("garbage limits give errors naming the line, never values") {
  CHECK_FALSE(ParseProcLimits("").ok());
  CHECK_FALSE(ParseProcLimits("hello world\n").ok());
  auto bad = FindLimit("Limit Soft Limit Hard Limit Units\nMax locked memory   lots  \x01\n",
                       "Max locked memory");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().where == "line 2");
  CHECK_FALSE(FindLimit(kLimits, "Max bogus thing").ok());
  // A bad unrelated row does not hide a good one.
  auto ok = FindLimit(std::string(kLimits) + "Max junk   x y z\n", "Max open files");
  CHECK(ok.ok());
  CHECK_FALSE(ParseProcLimits("Limit Soft Limit\nMax x 99999999999999999999999 1 bytes\n").ok());
}

TEST_CASE("mounts: fields, octal escapes, size options in every unit") {
  auto m = ParseProcMounts(
      "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k,inode64 0 0\n"
      "/dev/sda1 /mnt/with\\040space ext4 rw 0 0\n");
  REQUIRE(m.ok());
  REQUIRE(m->size() == 2);
  CHECK((*m)[1].mount_point == "/mnt/with space");
  CHECK(MountOption((*m)[0].options, "size") == std::optional<std::string>("65536k"));
  CHECK_FALSE(MountOption("rw,nosize", "size").has_value());
  CHECK(ParseTmpfsSize("65536k", 0).value() == 64ull << 20);
  CHECK(ParseTmpfsSize("16g", 0).value() == 16ull << 30);
  CHECK(ParseTmpfsSize("1048576", 0).value() == 1048576);
  CHECK(ParseTmpfsSize("50%", 1000).value() == 500);
  CHECK_FALSE(ParseTmpfsSize("lots", 0).ok());
  CHECK_FALSE(ParseTmpfsSize("99999999999999999999e", 0).ok());
  CHECK_FALSE(ParseTmpfsSize("50%", 0).ok());
  CHECK_FALSE(ParseProcMounts("just two\n").ok());
  CHECK(ParseMemTotal("MemTotal:       2113591344 kB\n").value() == 2113591344ull * 1024);
  CHECK_FALSE(ParseMemTotal("MemFree: 1 kB\n").ok());
}

TEST_CASE("NVIDIA version: open and proprietary modules") {
  auto open = ParseNvidiaVersion(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
      "(dvs-builder@U22-I3-B10-02-5)  Tue Jul  1 18:40:31 UTC 2025\nGCC version:  gcc 12\n");
  REQUIRE(open.ok());
  CHECK(open->version == "580.159.04");
  CHECK(open->major == 580);
  CHECK(open->open_kernel);
  auto prop = ParseNvidiaVersion(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC "
      "2024\n");
  REQUIRE(prop.ok());
  CHECK(prop->version == "535.183.01");
  CHECK_FALSE(prop->open_kernel);
  CHECK_FALSE(ParseNvidiaVersion("NVRM version: \n").ok());
  CHECK_FALSE(ParseNvidiaVersion("").ok());
  CHECK(ParseGpuInformationModel("Model: \t\t NVIDIA H200\nIRQ: 0\n") == "NVIDIA H200");
  CHECK(ParseGpuInformationModel("garbage") == "");
}

TEST_CASE("IPv4 local addresses from fib_trie map to interfaces through route") {
  // Captured from a live node (/proc/net/fib_trie, /proc/net/route).
  const char* trie =
      "Main:\n"
      "  +-- 0.0.0.0/0 3 0 5\n"
      "     |-- 0.0.0.0\n"
      "        /0 universe UNICAST\n"
      "     +-- 127.0.0.0/8 2 0 2\n"
      "        +-- 127.0.0.0/31 1 0 0\n"
      "           |-- 127.0.0.0\n"
      "              /8 host LOCAL\n"
      "           |-- 127.0.0.1\n"
      "              /32 host LOCAL\n"
      "     +-- 192.0.2.0/24 2 0 2\n"
      "           |-- 192.0.2.0\n"
      "              /24 link UNICAST\n"
      "           |-- 192.0.2.2\n"
      "              /32 host LOCAL\n"
      "        |-- 192.0.2.255\n"
      "           /32 link BROADCAST\n"
      "Local:\n"
      "  +-- 0.0.0.0/0 3 0 5\n"
      "           |-- 192.0.2.2\n"
      "              /32 host LOCAL\n";
  auto local = ParseFibTrieLocal(trie);
  REQUIRE(local.size() == 2);
  CHECK(local[0] == "127.0.0.1");
  CHECK(local[1] == "192.0.2.2");
  auto routes = ParseProcRoute(
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
      "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
  REQUIRE(routes.ok());
  CHECK(InterfaceForIpv4(*routes, "192.0.2.2") == "eth0");
  CHECK(InterfaceForIpv4(*routes, "127.0.0.1") == "lo");
  CHECK(InterfaceForIpv4(*routes, "10.9.9.9") == "");  // only the default route matches
  CHECK_FALSE(ParseProcRoute("eth0 zz\n").ok());
  CHECK(ParseFibTrieLocal("garbage\n|-- not.an.ip\n   /32 host LOCAL\n").empty());
  auto v6 = ParseIfInet6(
      "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n"
      "00000000000000000000000000000001 01 80 10 80       lo\nbroken line\n");
  REQUIRE(v6.size() == 2);
  CHECK(v6[0].iface == "eth0");
  CHECK(v6[0].address == "fe80::fc:ff:fe00:1");
  CHECK(v6[1].address == "::1");
}

TEST_CASE("kmsg records: prio, seq, time, escapes and dictionary lines") {
  auto p = ParseKmsg(
      "6,1,0,-;Linux version 6.1\n"
      "3,15,33059091472,-;mlx5_core 0000:41:00.0: mlx5_cmd_out_err:800:(pid 233522): "
      "CREATE_MKEY(0x200) op_mod(0x0) failed, status limits exceeded(0x8), syndrome (0x18af6), "
      "err(-12)\n"
      " SUBSYSTEM=pci\n"
      " DEVICE=+pci:0000:41:00.0\n"
      "4,22,1084456074591,-;NVRM: A GPU crash dump has been created.\\x0aNVRM: next line\n");
  REQUIRE(p.bad_lines.empty());
  REQUIRE(p.records.size() == 3);
  CHECK(p.records[1].level == 3);
  CHECK(p.records[1].seq == 15);
  CHECK(p.records[1].usec == 33059091472);
  CHECK(p.records[1].device == "+pci:0000:41:00.0");
  CHECK(p.records[2].message.find('\n') != std::string::npos);
  CHECK(KmsgDmesgLine(p.records[1]).rfind("[33059.091472] mlx5_core", 0) == 0);
}

TEST_CASE("kmsg garbage lines are reported by number and skipped") {
  auto p = ParseKmsg(
      "this is not a kmsg record\n6,notanumber,12,-;x\n;;;;\n SUBSYSTEM=pci\n"
      "4,99,-5,-;NVRM: Xid\n6,100,31999999,-;ok\n\xff\xfe\n");
  CHECK(p.records.size() == 1);
  CHECK(p.bad_lines == std::vector<int>{1, 2, 3, 4, 5, 7});
}

TEST_CASE("kernel events: mlx5 failures, flaps, Xid, fallen off the bus, AER") {
  auto ev = [](std::string msg) {
    KmsgRecord r;
    r.message = std::move(msg);
    return ClassifyKernelRecord(r);
  };
  auto mkey =
      ev("mlx5_core 0000:41:00.0: mlx5_cmd_out_err:800:(pid 233522): CREATE_MKEY(0x200) "
         "op_mod(0x0) failed, status limits exceeded(0x8), syndrome (0x18af6), err(-12)");
  REQUIRE(mkey);
  CHECK(mkey->kind == KernelEventKind::kMlx5CommandFailure);
  CHECK(mkey->entity == "0000:41:00.0");
  CHECK(mkey->what.rfind("CREATE_MKEY(0x200)", 0) == 0);
  auto timeout =
      ev("mlx5_core 0000:17:00.0: cmd_work_handler:877:(pid 6): failed to allocate "
         "command entry");
  REQUIRE(timeout);
  CHECK(timeout->kind == KernelEventKind::kMlx5CommandFailure);
  auto mr =
      ev("infiniband mlx5_0: create_mkey_warn:158:(pid 2163): async reg mr failed. status "
         "-121");
  REQUIRE(mr);
  CHECK(mr->kind == KernelEventKind::kMlx5MrFailure);
  CHECK(mr->entity == "mlx5_0");
  auto sup = ev("mlx5_cmd_out_err: 353031 callbacks suppressed");
  REQUIRE(sup);
  CHECK(sup->kind == KernelEventKind::kSuppressed);
  CHECK(sup->count == 353031);
  auto down = ev("mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN");
  REQUIRE(down);
  CHECK(down->kind == KernelEventKind::kLinkDown);
  CHECK(down->entity == "mlx5_5:1");
  auto up = ev("mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE");
  REQUIRE(up);
  CHECK(up->kind == KernelEventKind::kLinkUp);
  CHECK_FALSE(ev("mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT"));
  auto carrier = ev("mlx5_core 0000:ab:00.0 ens1np0: Link down");
  REQUIRE(carrier);
  CHECK(carrier->entity == "ens1np0");
  auto xid = ev("NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.");
  REQUIRE(xid);
  CHECK(xid->kind == KernelEventKind::kXid);
  CHECK(xid->xid == 79);
  CHECK(xid->fatal);
  CHECK(xid->entity == "0000:09:00.0");
  auto app = ev("NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python, Graphics Exception");
  REQUIRE(app);
  CHECK_FALSE(app->fatal);
  auto bus = ev("NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.");
  REQUIRE(bus);
  CHECK(bus->kind == KernelEventKind::kGpuFellOffBus);
  CHECK(bus->entity == "0000:09:00.0");
  auto aer = ev("pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0");
  REQUIRE(aer);
  CHECK(aer->kind == KernelEventKind::kPcieAerCorrected);
  CHECK(aer->entity == "0000:00:03.0");
  auto fatal = ev("pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: 0000:04:00.0");
  REQUIRE(fatal);
  CHECK(fatal->fatal);
  CHECK(fatal->entity == "0000:04:00.0");
  CHECK_FALSE(ev("EXT4-fs (md127p3): re-mounted. Quota mode: none."));
  CHECK_FALSE(ev("NVRM: Xid (PCI:0000:09:00): notanumber"));
  CHECK_FALSE(ev(""));
}

TEST_CASE("ACS capability found in a full config space, with lspci's ACSCtl text") {
  auto r = FindAcsInConfig(Config(4096, 0x1d));
  REQUIRE(r.ok());
  CHECK(r->status == ConfigAcs::kFound);
  CHECK(r->acs.offset == 0x148);
  CHECK(r->acs.control == 0x1d);
  CHECK(r->vendor == 0x8086);
  CHECK(AcsControlText(0x1d) ==
        "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-");
  auto none = FindAcsInConfig(Config(4096, 0, false));
  REQUIRE(none.ok());
  CHECK(none->status == ConfigAcs::kAbsent);
}

TEST_CASE("short config spaces: unprivileged, no extended space, truncated") {
  CHECK(FindAcsInConfig(Config(64, 0)).value().status == ConfigAcs::kUnprivileged);
  CHECK(FindAcsInConfig(Config(256, 0)).value().status == ConfigAcs::kNoExtended);
  auto cut = FindAcsInConfig(Config(0x14a, 0x1d));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().message.find("truncated") != std::string::npos);
  CHECK_FALSE(FindAcsInConfig(Config(0x30, 0)).ok());
  CHECK_FALSE(FindAcsInConfig("").ok());
  // A capability list pointing into the standard header, and one that loops.
  std::string bad = Config(4096, 0);
  bad[0x102] = 0x00;
  bad[0x103] = 0x04;  // next = 0x040
  CHECK_FALSE(FindAcsInConfig(bad).ok());
  std::string loop = Config(4096, 0, false);
  loop[0x103] = 0x10;  // next = 0x100: itself
  CHECK_FALSE(FindAcsInConfig(loop).ok());
}

TEST_CASE("sysctl values: tab separated vectors, garbage is an error") {
  CHECK(ParseSysctlValues("4096\t131072\t6291456\n", 3).value() ==
        std::vector<std::uint64_t>{4096, 131072, 6291456});
  CHECK(ParseSysctlValues("212992\n", 1).value() == std::vector<std::uint64_t>{212992});
  CHECK_FALSE(ParseSysctlValues("not-a-number\n", 1).ok());
  CHECK_FALSE(ParseSysctlValues("4096\n", 3).ok());
  CHECK_FALSE(ParseSysctlValues("", 0).ok());
}
