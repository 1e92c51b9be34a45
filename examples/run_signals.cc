#include "examples/run_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace lockstep::run {
namespace {

int write_end = -1;

void WriteSignal(int signal_number) {
  const int saved_errno = errno;
  const char byte = static_cast<char>(signal_number);
  // A full pipe drops the byte, but then the loop has bytes to wake for anyway.
  [[maybe_unused]] const ssize_t written = write(write_end, &byte, 1);
  errno = saved_errno;
}

constexpr int kCaught[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};

}  // namespace

absl::StatusOr<int> InstallSignalPipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  write_end = fds[1];
  struct sigaction action = {};
  action.sa_handler = WriteSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signal_number : kCaught) sigaction(signal_number, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return fds[0];
}

int NextSignal(int fd) {
  unsigned char byte = 0;
  return read(fd, &byte, 1) == 1 ? byte : 0;
}

void RestoreSignalsInChild(const sigset_t& mask) {
  for (int signal_number : kCaught) signal(signal_number, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);  // an ignored signal stays ignored across exec
  sigprocmask(SIG_SETMASK, &mask, nullptr);
}

void DieBySignal(int signal_number) {
  signal(signal_number, SIG_DFL);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, signal_number);
  sigprocmask(SIG_UNBLOCK, &mask, nullptr);
  raise(signal_number);
  _exit(128 + signal_number);  // not reached for the forwarded signals, whose default ends it
}

std::string SignalName(int signal_number) {
  const char* abbreviation = sigabbrev_np(signal_number);
  if (abbreviation == nullptr) return absl::StrCat("signal ", signal_number);
  return absl::StrCat("SIG", abbreviation);
}

}  // namespace lockstep::run
