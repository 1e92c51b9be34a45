#include "core/logging.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <utility>

namespace lockstep {
namespace {

std::atomic<int> g_rank{-1};
std::mutex g_log_mutex;
std::ostream* g_open_line = nullptr;  // guarded by g_log_mutex

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "";
    case LogLevel::kWarning:
      return "warning: ";
    case LogLevel::kError:
      return "error: ";
    case LogLevel::kFatal:
      return "fatal: ";
  }
  return "";
}

}  // namespace

void SetLogRank(int rank) { g_rank = rank; }
int LogRank() { return g_rank; }

std::string LogPrefix() {
  int rank = g_rank;
  return rank < 0 ? std::string("lockstep: ") : "lockstep: [rank " + std::to_string(rank) + "] ";
}

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level) {
  stream_ << LogPrefix() << LevelName(level);
  if (level == LogLevel::kFatal) {
    const char* base = std::strrchr(file, '/');
    stream_ << (base ? base + 1 : file) << ":" << line << ": ";
  }
}

void SetOpenLine(std::ostream* stream) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_open_line = stream;
}

void ForgetOpenLine(const std::ostream* stream) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  if (g_open_line == stream) g_open_line = nullptr;
}

LogMessage::~LogMessage() {
  {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    if (g_open_line != nullptr) *std::exchange(g_open_line, nullptr) << '\n' << std::flush;
    std::ostream& out = level_ == LogLevel::kInfo ? std::cout : std::cerr;
    // One write: under mpirun, the ranks' lines would interleave between text and newline.
    out << stream_.str() + '\n' << std::flush;
  }
  if (level_ == LogLevel::kFatal) std::abort();
}

}  // namespace lockstep
