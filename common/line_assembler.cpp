#include "common/line_assembler.h"

#include <cstring>

namespace sl {

namespace {

// The first line end in `s`: '\n', or '\r' too when a lone CR ends lines.
std::size_t FindEol(std::string_view s, bool cr) {
  if (!cr) return s.find('\n');
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') return i;
  }
  return std::string_view::npos;
}

}  // namespace

void LineAssembler::Feed(std::string_view bytes) {
  if (options_.long_line == LongLine::kPieces) {
    FeedPieces(bytes);
  } else {
    FeedCut(bytes);
  }
}

// Whole lines go out in one piece straight from `bytes`; only the unterminated tail of a feed is
// copied (to partial_), and partial_ never holds max_line bytes without handing them over.
void LineAssembler::FeedPieces(std::string_view data) {
  const std::size_t cap = options_.max_line;
  if (!partial_.empty()) {  // finish the pending line first
    const std::size_t nl = data.find('\n');
    const std::size_t take = nl == std::string_view::npos ? data.size() : nl + 1;
    partial_.append(data.substr(0, take));
    data.remove_prefix(take);
    // The pending piece and this feed's part of the line may together pass the cap: cut the
    // pieces off first.
    while (partial_.size() > cap || (partial_.size() == cap && partial_.back() != '\n')) {
      on_text_(std::string_view(partial_).substr(0, cap));
      partial_.erase(0, cap);
    }
    if (nl != std::string_view::npos) {
      on_text_(partial_);
      partial_.clear();
    }
  }
  if (partial_.empty()) {  // `data` starts at a line start
    const void* last = data.empty() ? nullptr : ::memrchr(data.data(), '\n', data.size());
    if (last != nullptr) {
      const std::size_t whole = static_cast<const char*>(last) - data.data() + 1;
      on_text_(data.substr(0, whole));
      data.remove_prefix(whole);
    }
    partial_.append(data);
  }
  while (partial_.size() >= cap) {
    on_text_(std::string_view(partial_).substr(0, cap));
    partial_.erase(0, cap);
  }
}

// Removes the line end at the front of `bytes` (CRLF as one); a CR that ends the chunk may be
// half of a CRLF: the '\n' that may start the next chunk is then dropped (pending_cr_).
void LineAssembler::DropEol(std::string_view* bytes) {
  const bool cr = bytes->front() == '\r';
  bytes->remove_prefix(1);
  if (!cr) return;
  if (bytes->empty()) {
    pending_cr_ = true;
  } else if (bytes->front() == '\n') {
    bytes->remove_prefix(1);
  }
}

void LineAssembler::FeedCut(std::string_view bytes) {
  const std::size_t cap = options_.max_line;
  const bool cr_ends = options_.cr_ends_line;
  if (pending_cr_ && !bytes.empty()) {
    pending_cr_ = false;
    if (bytes.front() == '\n') bytes.remove_prefix(1);
  }
  while (!bytes.empty()) {
    if (skipping_) {
      // The dropped rest of an over-long line runs to its line end, CR included: the cap is per
      // line, so what follows a progress bar's CR is a line of its own.
      const std::size_t e = FindEol(bytes, cr_ends);
      if (e == std::string_view::npos) return;
      skipping_ = false;
      bytes.remove_prefix(e);
      DropEol(&bytes);
      continue;
    }
    if (partial_.empty()) {
      // The common case: a run of whole '\n' lines with no lone CR in them, handed over as is.
      std::size_t p = 0, count = 0;
      while (const void* q = std::memchr(bytes.data() + p, '\n', bytes.size() - p)) {
        const std::size_t e = static_cast<const char*>(q) - bytes.data();
        if (e - p > cap) break;
        if (cr_ends) {
          const void* cr = std::memchr(bytes.data() + p, '\r', e - p);
          if (cr != nullptr && static_cast<const char*>(cr) != bytes.data() + e - 1) break;
        }
        p = e + 1;
        ++count;
      }
      if (count > 0) {
        lines_ += count;
        on_text_(bytes.substr(0, p));
        bytes.remove_prefix(p);
        continue;
      }
    }
    const std::size_t e = FindEol(bytes, cr_ends);
    const std::size_t take = e == std::string_view::npos ? bytes.size() : e;
    if (partial_.size() + take > cap) {
      // An over-long line: its first max_line bytes stand for it, the rest is dropped.
      const std::size_t keep = cap - partial_.size();
      partial_.append(bytes.data(), keep);
      EndLine(/*cut=*/true);
      skipping_ = true;
      bytes.remove_prefix(keep);
    } else {
      partial_.append(bytes.data(), take);
      bytes.remove_prefix(take);
      if (e == std::string_view::npos) return;
      DropEol(&bytes);
      EndLine(/*cut=*/false);
    }
  }
}

void LineAssembler::EndLine(bool cut) {
  // A line end "\r\n" split across two feeds.
  if (options_.cr_ends_line && !partial_.empty() && partial_.back() == '\r') partial_.pop_back();
  partial_.push_back('\n');
  ++lines_;
  if (cut) ++cut_lines_;
  on_text_(partial_);
  partial_.clear();
}

void LineAssembler::Finish() {
  if (options_.long_line == LongLine::kPieces) {
    if (!partial_.empty()) on_text_(partial_);
    partial_.clear();
    return;
  }
  if (!partial_.empty()) EndLine(/*cut=*/false);
  skipping_ = false;
  pending_cr_ = false;
}

}  // namespace sl
