#include "examples/termination.h"

#include <unistd.h>

#include <csignal>
#include <string>

#include "core/logging.h"

namespace lockstep {
namespace {

// Written before any signal can come: the handler may only call async-signal-safe functions.
// Never destroyed: a signal may arrive while the process exits, after static destructors ran.
std::string& sigterm_line = *new std::string;
std::string& sigint_line = *new std::string;

std::string LineFor(std::string_view signal_name, std::string_view ckpt_dir) {
  std::string line = LogPrefix() + "stopped by " + std::string(signal_name);
  if (ckpt_dir.empty()) return line + " (no --ckpt-dir: nothing to resume from)\n";
  return line + "; --resume " + std::string(ckpt_dir) +
         " goes on from the newest complete step there\n";
}

void SayAndDie(int signal_number) {
  const std::string& line = signal_number == SIGTERM ? sigterm_line : sigint_line;
  [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, line.data(), line.size());
  // SA_RESETHAND restored the default action: the process now ends by the signal itself.
  raise(signal_number);
}

}  // namespace

void ExplainTermination(std::string_view ckpt_dir) {
  sigterm_line = LineFor("SIGTERM", ckpt_dir);
  sigint_line = LineFor("SIGINT", ckpt_dir);
  struct sigaction action = {};
  action.sa_handler = SayAndDie;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

}  // namespace lockstep
