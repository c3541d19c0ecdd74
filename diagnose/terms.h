#pragma once
// The vocabulary's terms: words of the fabric, the GPU and the launcher that carry a cause even
// inside a line no catalog row knows ("ibv_create_qp", "RLIMIT_MEMLOCK", "/dev/shm", "GID",
// "Xid", "SeqNum"). The engine turns each term found in a line the catalog knows only as a
// failure (a generic failure row's, NCCL's WARN catch-all's) into a feature "term:<id>" whose
// weights the fit learns like any row's: a log in words the catalog never saw still reaches the
// differential by what it talks about. The table is diagnose/catalog/terms.inc.
#include <span>
#include <string_view>
#include <vector>

namespace sl::diagnose {

struct Term {
  std::string_view id;          ///< the concept, "memlock"; several texts may share one id
  std::string_view text;        ///< the substring looked for, case as printed ("RLIMIT_MEMLOCK")
  std::string_view provenance;  ///< who prints or names it, "<project> <file> <range>"
};

std::span<const Term> Terms();

/// The ids of the terms whose text occurs in `line`, each once, in the table's order.
std::vector<std::string_view> TermsIn(std::string_view line);

}  // namespace sl::diagnose
