#include "examples/run_output.h"

#include <unistd.h>

#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace lockstep::run {
namespace {

// A rank that writes this much without a line end gets it passed on as a line of its own, so
// that lockstep-run's memory stays bounded.
constexpr size_t kMaxLine = 64 * 1024;

}  // namespace

void LineRelay::Take(absl::string_view bytes) {
  pending_.append(bytes.data(), bytes.size());
  std::string lines;
  size_t start = 0;
  for (size_t end; (end = pending_.find_first_of("\r\n", start)) != std::string::npos;) {
    size_t next = end + 1;
    if (pending_[end] == '\r') {
      if (next == pending_.size()) break;  // a redraw or "\r\n": the next byte tells
      if (pending_[next] == '\n') ++next;
    }
    const absl::string_view line(pending_.data() + start, next - start);
    absl::StrAppend(&lines, prefix_, line);
    const absl::string_view text = absl::StripAsciiWhitespace(line);
    if (line.back() == '\n' && !text.empty()) last_line_ = std::string(text);
    start = next;
  }
  pending_.erase(0, start);
  Emit(lines);
  if (pending_.size() >= kMaxLine) Flush();
}

void LineRelay::Flush() {
  if (pending_.empty()) return;
  pending_.push_back('\n');
  Take("");
}

void LineRelay::Emit(absl::string_view text) {
  // One write per batch of whole lines; a reader that went away (EPIPE) loses the output, not
  // the ranks.
  while (!text.empty()) {
    const ssize_t written = write(out_fd_, text.data(), text.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    text.remove_prefix(static_cast<size_t>(written));
  }
}

}  // namespace lockstep::run
