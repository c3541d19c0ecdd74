#include "nccl/name_filter.h"

#include "common/strings.h"

namespace sl::nccl {
namespace {

Result<NameFilter> ParseFilter(std::string_view var, std::string_view spec, bool ports) {
  NameFilter f;
  std::string_view s = Trim(spec);
  const std::string where = std::string(var) + "=" + std::string(spec);
  if (!s.empty() && s.front() == '^') {
    f.exclude = true;
    s.remove_prefix(1);
  }
  if (!s.empty() && s.front() == '=') {
    f.exact = true;
    s.remove_prefix(1);
  }
  if (s.empty()) {
    return MakeError("no names given", where,
                     "list names separated by commas, e.g. " + std::string(var) +
                         (ports ? "=mlx5_0:1,mlx5_1:1" : "=eth0"));
  }
  for (const std::string& raw : Split(s, ',', false)) {
    std::string_view item = Trim(raw);
    if (item.empty()) {
      return MakeError("empty entry in the list", where, "remove the doubled or trailing comma");
    }
    NameFilter::Entry e;
    auto colon = item.find(':');
    if (colon != std::string_view::npos) {
      if (!ports) {
        return MakeError("':' is not allowed in an interface name", where,
                         "name the interface only, e.g. eth0");
      }
      auto port = ParseInt(item.substr(colon + 1), where);
      if (!port.ok() || *port < 1 || *port > 255) {
        return MakeError("bad port number '" + std::string(item.substr(colon + 1)) + "'", where,
                         "ports are numbered from 1, e.g. mlx5_0:1");
      }
      e.port = static_cast<int>(*port);
      item = item.substr(0, colon);
      if (item.empty()) return MakeError("port without a device name", where);
    }
    e.name = std::string(item);
    f.entries.push_back(std::move(e));
  }
  return f;
}

bool NameMatches(const NameFilter& f, std::string_view want, std::string_view name) {
  return f.exact ? name == want : StartsWith(name, want);
}

}  // namespace

Result<NameFilter> ParseIbHca(std::string_view spec) {
  return ParseFilter("NCCL_IB_HCA", spec, true);
}

Result<NameFilter> ParseSocketIfname(std::string_view spec) {
  return ParseFilter("NCCL_SOCKET_IFNAME", spec, false);
}

bool FilterSelectsIbPort(const NameFilter& f, std::string_view device, int port) {
  bool listed = false;
  for (const auto& e : f.entries) {
    if (NameMatches(f, e.name, device) && (e.port < 0 || e.port == port)) {
      listed = true;
      break;
    }
  }
  return f.exclude ? !listed : listed;
}

bool FilterSelectsIfname(const NameFilter& f, std::string_view name) {
  bool listed = false;
  for (const auto& e : f.entries) {
    if (NameMatches(f, e.name, name)) {
      listed = true;
      break;
    }
  }
  return f.exclude ? !listed : listed;
}

std::string FormatFilter(const NameFilter& f) {
  std::string out;
  if (f.exclude) out += '^';
  if (f.exact) out += '=';
  for (std::size_t i = 0; i < f.entries.size(); ++i) {
    if (i) out += ',';
    out += f.entries[i].name;
    if (f.entries[i].port >= 0) out += ":" + std::to_string(f.entries[i].port);
  }
  return out;
}

}  // namespace sl::nccl
