#include "examples/run_group.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "examples/run_output.h"
#include "examples/run_signals.h"
#include "examples/run_spawn.h"

namespace lockstep::run {
namespace {

using Clock = std::chrono::steady_clock;

// How long ranks told to end (SIGTERM, or the signal lockstep-run received) have before SIGKILL:
// enough to print why and exit, as a checkpoint cut short is abandoned whole anyway.
constexpr std::chrono::seconds kGrace{5};
// How long the other ranks have to end by themselves after the first fails, before they are told
// to: after an error every rank agrees on, all exit together, and a SIGTERM would cut one short.
constexpr std::chrono::seconds kSettle{2};
constexpr size_t kReadSize = 64 * 1024;
constexpr int kStderr = 1;  // the index of a rank's stderr in its fds and relays

struct Rank {
  explicit Rank(int rank)
      : rank(rank),
        relays{LineRelay(STDOUT_FILENO, Prefix(rank)), LineRelay(STDERR_FILENO, Prefix(rank))} {}
  static std::string Prefix(int rank) { return absl::StrCat("[rank ", rank, "] "); }

  int rank;
  pid_t pid = -1;                     // -1 before the start and once reaped
  std::array<int, 2> fds = {-1, -1};  // its stdout and stderr
  std::array<LineRelay, 2> relays;
};

class Group {
 public:
  explicit Group(int signal_fd) : signal_fd_(signal_fd) {}

  GroupOutcome Run(const std::vector<std::string>& command,
                   const std::vector<RankLaunch>& launches) {
    ranks_.reserve(launches.size());
    for (const RankLaunch& launch : launches) ranks_.emplace_back(launch.rank);
    Start(command, launches);
    while (live_ > 0) {
      Poll();
      HandleSignals();
      Reap();
      if (settle_ && !deadline_ && Clock::now() >= *settle_) EndLive(SIGTERM);
      if (deadline_ && !killed_ && Clock::now() >= *deadline_) KillLive();
    }
    for (Rank& rank : ranks_) CloseOutput(rank);
    return outcome_;
  }

 private:
  void Start(const std::vector<std::string>& command, const std::vector<RankLaunch>& launches) {
    for (size_t i = 0; i < launches.size(); ++i) {
      absl::StatusOr<Child> child = SpawnChild(command, launches[i].env);
      if (!child.ok()) {
        outcome_ = {.kind = GroupOutcome::Kind::kNotStarted,
                    .rank = launches[i].rank,
                    .what = std::string(child.status().message()),
                    .exit_code = SpawnExitCode(child.status())};
        EndLive(SIGTERM);
        return;
      }
      ranks_[i].pid = child->pid;
      ranks_[i].fds = {child->out_fd, child->err_fd};
      ++live_;
    }
  }

  // Waits for output, a signal or the grace period's end, and passes on the output: one read
  // per stream, so that no rank's output holds back the others'.
  void Poll() {
    std::vector<pollfd> polled = {{signal_fd_, POLLIN, 0}};
    std::vector<std::pair<Rank*, int>> streams;
    for (Rank& rank : ranks_) {
      for (int stream = 0; stream < 2; ++stream) {
        if (rank.fds[stream] < 0) continue;
        polled.push_back({rank.fds[stream], POLLIN, 0});
        streams.emplace_back(&rank, stream);
      }
    }
    // SIGCHLD wakes the poll; the bound only guards against a wake-up lost all the same.
    int timeout_ms = 1000;
    const std::optional<Clock::time_point> next = deadline_ ? deadline_ : settle_;
    if (next && !killed_) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now());
      timeout_ms = std::clamp(static_cast<int>(left.count()), 0, timeout_ms);
    }
    if (poll(polled.data(), polled.size(), timeout_ms) <= 0) return;
    for (size_t i = 1; i < polled.size(); ++i) {
      if (polled[i].revents != 0) ReadOutput(*streams[i - 1].first, streams[i - 1].second, 1);
    }
  }

  // Passes on up to `reads` reads of a stream; at its end, the partial last line too.
  void ReadOutput(Rank& rank, int stream, int reads) {
    char buffer[kReadSize];
    while (reads-- > 0 && rank.fds[stream] >= 0) {
      const ssize_t got = read(rank.fds[stream], buffer, sizeof buffer);
      if (got > 0) {
        rank.relays[stream].Take(absl::string_view(buffer, static_cast<size_t>(got)));
      } else if (got < 0 && errno == EINTR) {
        ++reads;
      } else if (got < 0 && errno == EAGAIN) {
        return;
      } else {
        rank.relays[stream].Flush();
        close(std::exchange(rank.fds[stream], -1));
      }
    }
  }

  // Everything a rank wrote before it ended, its partial last lines included.
  void DrainOutput(Rank& rank) {
    for (int stream = 0; stream < 2; ++stream) {
      ReadOutput(rank, stream, std::numeric_limits<int>::max());
      rank.relays[stream].Flush();
    }
  }

  void CloseOutput(Rank& rank) {
    DrainOutput(rank);
    for (int& fd : rank.fds) {
      if (fd >= 0) close(std::exchange(fd, -1));
    }
  }

  void HandleSignals() {
    for (int signal_number; (signal_number = NextSignal(signal_fd_)) != 0;) {
      if (signal_number == SIGCHLD) continue;  // Reap looks at every rank
      if (outcome_.stop_signal == 0) outcome_.stop_signal = signal_number;
      // A second signal, or one while the ranks are being ended already, does not wait.
      if (deadline_) {
        KillLive();
      } else {
        EndLive(signal_number);
      }
    }
  }

  // Reaps every rank that ended. The first that failed is named, unless one failing in the
  // settling time after it says why and it did not; the ranks still live then are ended.
  void Reap() {
    for (Rank& rank : ranks_) {
      int status = 0;
      if (rank.pid < 0 || waitpid(rank.pid, &status, WNOHANG) != rank.pid) continue;
      DrainOutput(rank);
      // What the rank started in its process group goes with it: no orphan outlives the job.
      killpg(rank.pid, SIGKILL);
      rank.pid = -1;
      --live_;
      const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (!failed || deadline_) continue;
      const bool first = outcome_.kind == GroupOutcome::Kind::kSucceeded;
      // Ranks ending alike failed alike (an error every rank agreed on, which rank 0 prints):
      // the one that says why is named. A rank ending otherwise failed because the first did.
      const bool says_why_alike = outcome_.message.empty() &&
                                  !rank.relays[kStderr].last_line().empty() &&
                                  ExitCode(status) == outcome_.exit_code;
      if (first || says_why_alike) RecordFailure(rank, status);
      if (first) settle_ = Clock::now() + kSettle;
    }
  }

  // The shell's convention: the exit status, or 128 + the signal.
  static int ExitCode(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  void RecordFailure(const Rank& rank, int status) {
    outcome_.kind = GroupOutcome::Kind::kRankFailed;
    outcome_.rank = rank.rank;
    outcome_.message = rank.relays[kStderr].last_line();
    outcome_.exit_code = ExitCode(status);
    outcome_.what = WIFEXITED(status)
                        ? absl::StrCat("exited with status ", outcome_.exit_code)
                        : absl::StrCat("was killed by ", SignalName(WTERMSIG(status)));
  }

  // Sends `signal_number` to every live rank's process group, names them as ended, and starts
  // the grace period.
  void EndLive(int signal_number) {
    for (const Rank& rank : ranks_) {
      if (rank.pid < 0) continue;
      killpg(rank.pid, signal_number);
      outcome_.ended.push_back(rank.rank);
    }
    deadline_ = Clock::now() + kGrace;
  }

  void KillLive() {
    for (const Rank& rank : ranks_) {
      if (rank.pid >= 0) killpg(rank.pid, SIGKILL);
    }
    killed_ = true;
  }

  int signal_fd_;
  std::vector<Rank> ranks_;
  int live_ = 0;
  std::optional<Clock::time_point> settle_;    // set once a rank failed
  std::optional<Clock::time_point> deadline_;  // set once the ranks are being ended
  bool killed_ = false;                        // SIGKILL sent: nothing left to wait for
  GroupOutcome outcome_;
};

}  // namespace

std::string Describe(const GroupOutcome& outcome) {
  std::string line;
  if (outcome.kind == GroupOutcome::Kind::kRankFailed) {
    line = absl::StrCat("rank ", outcome.rank, " ", outcome.what);
    if (!outcome.message.empty()) absl::StrAppend(&line, ": ", outcome.message);
  } else if (outcome.kind == GroupOutcome::Kind::kNotStarted) {
    // When no rank started, the line names the program; no rank need be.
    line = outcome.ended.empty()
               ? outcome.what
               : absl::StrCat("rank ", outcome.rank, " did not start: ", outcome.what);
  }
  if (!outcome.ended.empty()) {
    absl::StrAppend(&line, line.empty() ? "" : "; ", "ended rank",
                    outcome.ended.size() > 1 ? "s " : " ", absl::StrJoin(outcome.ended, ", "));
  }
  return line;
}

GroupOutcome RunGroup(const std::vector<std::string>& command,
                      const std::vector<RankLaunch>& launches, int signal_fd) {
  return Group(signal_fd).Run(command, launches);
}

}  // namespace lockstep::run
