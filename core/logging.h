#pragma once

// Logging with a rank prefix ("lockstep: [rank 3] ..."), and LS_CHECK for internal invariants.
// Errors that can happen at run time (I/O, user graphs, shapes, communication) are absl::Status,
// never LS_CHECK.

#include <sstream>
#include <string>

namespace lockstep {

enum class LogLevel { kInfo, kWarning, kError, kFatal };

// The rank printed in every log line; -1 (the default) prints no rank.
void SetLogRank(int rank);
int LogRank();
// "lockstep: [rank 3] " or "lockstep: ".
std::string LogPrefix();

// A line left open on `stream` (a progress bar redrawn in place with '\r'): a log line first
// ends it, so that the message is not glued to the bar. SetOpenLine(nullptr) when the line is
// closed; ForgetOpenLine(stream) when the stream goes (only clears it if it is that stream).
void SetOpenLine(std::ostream* stream);
void ForgetOpenLine(const std::ostream* stream);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

// Lets the LS_CHECK macro swallow the stream expression when the condition holds.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace lockstep

#define LS_LOG(level) \
  ::lockstep::LogMessage(::lockstep::LogLevel::k##level, __FILE__, __LINE__).stream()

#define LS_CHECK(cond)                                                                           \
  (cond) ? (void)0                                                                               \
         : ::lockstep::LogVoidify() &                                                            \
               ::lockstep::LogMessage(::lockstep::LogLevel::kFatal, __FILE__, __LINE__).stream() \
                   << "check failed: " #cond " "
