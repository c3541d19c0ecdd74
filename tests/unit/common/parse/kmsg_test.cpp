// Parser of /dev/kmsg records and kernel events (common/parse/kmsg.h): literal kernel text in,
// values out; garbage never crashes.
#include "common/parse/kmsg.h"

#include <catch2/catch.hpp>
#include <string>

using namespace sl;

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
