// How lockstep-run passes on what a rank writes: whole lines, each prefixed with the rank
// ("[rank 3] "), so that the lines of several ranks never mix within a line.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace lockstep::run {

class LineRelay {
 public:
  // Writes to `out_fd` (lockstep-run's stdout or stderr), every line led by `prefix`.
  LineRelay(int out_fd, std::string prefix) : out_fd_(out_fd), prefix_(std::move(prefix)) {}

  // Passes on every complete line of what `bytes` completes and keeps the rest. A line ends at
  // '\n', or at a '\r' of its own (a progress bar redrawn in place stays one, prefixed, line).
  void Take(absl::string_view bytes);
  // Passes on the partial last line, ended with '\n' (the rank exited without one).
  void Flush();
  // The last line that was not blank, without its end: the failed rank's message.
  const std::string& last_line() const { return last_line_; }

 private:
  void Emit(absl::string_view text);

  int out_fd_;
  std::string prefix_;
  std::string pending_;
  std::string last_line_;
};

}  // namespace lockstep::run
