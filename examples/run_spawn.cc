#include "examples/run_spawn.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "examples/run_signals.h"

namespace lockstep::run {
namespace {

// A descriptor closed when it goes out of scope, unless released.
class Fd {
 public:
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }
  int* address() { return &fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Close() {
    if (fd_ >= 0) close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
};

// Read and write ends of a pipe that no other child inherits.
absl::Status MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  *read_end.address() = fds[0];
  *write_end.address() = fds[1];
  return absl::OkStatus();
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const std::string& text : strings) pointers.push_back(const_cast<char*>(text.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

struct ChildFds {
  int in, out, err, report;  // report: where an exec failure's errno goes
};

// The child between fork and exec: async-signal-safe calls only.
[[noreturn]] void ExecChild(char* const* argv, char* const* envp, const ChildFds& fds,
                            const sigset_t& mask, pid_t parent) {
  RestoreSignalsInChild(mask);
  setpgid(0, 0);
  // If lockstep-run dies, even by SIGKILL, the kernel kills the rank; a parent that died before
  // this line is caught by the check after it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(128 + SIGKILL);
  dup2(fds.in, STDIN_FILENO);
  dup2(fds.out, STDOUT_FILENO);
  dup2(fds.err, STDERR_FILENO);
  execvpe(argv[0], argv, envp);
  const int error = errno;
  [[maybe_unused]] const ssize_t written = write(fds.report, &error, sizeof error);
  _exit(127);
}

absl::Status ExecError(const std::string& program, int error) {
  if (error == ENOENT && program.find('/') == std::string::npos) {
    return absl::NotFoundError(absl::StrCat("cannot execute '", program, "': not found in PATH"));
  }
  const std::string message =
      absl::StrCat("cannot execute '", program, "': ", std::strerror(error));
  return error == ENOENT ? absl::NotFoundError(message) : absl::PermissionDeniedError(message);
}

// Waits for the child's exec: 0 when it happened, else the errno of the failure.
int WaitForExec(int report_fd) {
  int error = 0;
  ssize_t got;
  do {
    got = read(report_fd, &error, sizeof error);
  } while (got < 0 && errno == EINTR);
  return got == sizeof error ? error : 0;
}

}  // namespace

absl::StatusOr<Child> SpawnChild(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env) {
  Fd out_read, out_write, err_read, err_write, report_read, report_write, null;
  LS_RETURN_IF_ERROR(MakePipe(out_read, out_write));
  LS_RETURN_IF_ERROR(MakePipe(err_read, err_write));
  LS_RETURN_IF_ERROR(MakePipe(report_read, report_write));
  *null.address() = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null.get() < 0) {
    return absl::InternalError(absl::StrCat("/dev/null: ", std::strerror(errno)));
  }
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_env = CStrings(env);
  const ChildFds fds{null.get(), out_write.get(), err_write.get(), report_write.get()};
  const pid_t parent = getpid();

  // No handler of lockstep-run's may run in the child before exec.
  sigset_t all, mask;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &mask);
  const pid_t pid = fork();
  if (pid == 0) ExecChild(c_argv.data(), c_env.data(), fds, mask, parent);
  const int fork_error = errno;
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  if (pid < 0) {
    return absl::InternalError(
        absl::StrCat("cannot start '", argv[0], "': fork: ", std::strerror(fork_error)));
  }

  report_write.Close();  // the read below ends at exec, when the child's copy closes
  if (const int error = WaitForExec(report_read.get()); error != 0) {
    waitpid(pid, nullptr, 0);
    return ExecError(argv[0], error);
  }
  fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
  fcntl(err_read.get(), F_SETFL, O_NONBLOCK);
  return Child{pid, out_read.Release(), err_read.Release()};
}

int SpawnExitCode(const absl::Status& status) {
  if (absl::IsNotFound(status)) return 127;
  if (absl::IsPermissionDenied(status)) return 126;
  return 1;
}

}  // namespace lockstep::run
