#include "parallel/watchdog.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/whereabouts.h"
#include "parallel/mpi_communicator.h"
#include "parallel/tcp_store.h"

namespace lockstep::parallel {
namespace {

constexpr int kQueryTag = 1;
constexpr int kAnswerTag = 2;
constexpr auto kPollEvery = std::chrono::milliseconds(20);
// How long the asking rank waits for the answers; then the silent ranks are unresponsive.
constexpr auto kAnswerWithin = std::chrono::seconds(5);

// A Whereabouts::Snapshot over the wire: "issued\tcompleted\tissued_label\tnode".
std::string Encode(const Whereabouts::Snapshot& now) {
  return absl::StrCat(now.issued, "\t", now.completed, "\t", now.issued_label, "\t", now.node);
}

std::optional<Whereabouts::Snapshot> Decode(const std::string& text) {
  std::vector<std::string> fields = absl::StrSplit(text, absl::MaxSplits('\t', 3));
  Whereabouts::Snapshot now;
  if (fields.size() != 4 || !absl::SimpleAtoi(fields[0], &now.issued) ||
      !absl::SimpleAtoi(fields[1], &now.completed)) {
    return std::nullopt;
  }
  now.issued_label = fields[2];
  now.node = fields[3];
  return now;
}

std::string DescribeRank(int rank, const Whereabouts::Snapshot& now, int64_t waited) {
  std::string line = absl::StrCat("  rank ", rank, ": ");
  if (now.issued < waited) absl::StrAppend(&line, "has not arrived; ");
  if (now.issued == 0) {
    absl::StrAppend(&line, "no collective issued yet");
  } else {
    absl::StrAppend(&line, "last issued collective #", now.issued, " ", now.issued_label,
                    ", completed up to #", now.completed);
  }
  absl::StrAppend(&line, now.node.empty() ? ", between steps" : ", running " + now.node);
  return line;
}

// Over MPI, on a communicator of its own: point-to-point questions and answers.
class MpiWatchdog : public Watchdog {
 public:
  MpiWatchdog(MPI_Comm comm, int rank, int size)
      : Watchdog(rank, size), comm_(comm), thread_([this] { Answer(); }) {}
  ~MpiWatchdog() override { Stop(); }
  void Stop() override {
    if (stopped_.exchange(true)) return;
    thread_.join();
    MPI_Comm_free(&comm_);
  }

 private:
  void Answer() {
    while (!stopped_) {
      int query = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, comm_, &query, &status) != MPI_SUCCESS) return;
      if (!query) {
        std::this_thread::sleep_for(kPollEvery);
        continue;
      }
      char byte = 0;
      MPI_Recv(&byte, 1, MPI_BYTE, status.MPI_SOURCE, kQueryTag, comm_, MPI_STATUS_IGNORE);
      const std::string answer = Encode(whereabouts_->Now());
      MPI_Send(answer.data(), static_cast<int>(answer.size()), MPI_CHAR, status.MPI_SOURCE,
               kAnswerTag, comm_);
    }
  }
  std::vector<std::optional<Whereabouts::Snapshot>> Gather() const override;

  MPI_Comm comm_;
  std::thread thread_;
};

// Over the rendezvous store of a job started without MPI: a survey is a numbered key every
// rank's watchdog waits for, each answer a key of its own. Two connections: the answering
// thread's waits hold one.
class StoreWatchdog : public Watchdog {
 public:
  StoreWatchdog(std::unique_ptr<TcpStore> answering, std::unique_ptr<TcpStore> asking,
                std::string prefix, int rank, int size)
      : Watchdog(rank, size),
        answering_(std::move(answering)),
        asking_(std::move(asking)),
        prefix_(std::move(prefix)),
        thread_([this] { Answer(); }) {}
  ~StoreWatchdog() override { Stop(); }
  void Stop() override {
    if (stopped_.exchange(true)) return;
    thread_.join();
    answering_.reset();
    asking_.reset();
  }

 private:
  std::string SurveyKey(int64_t survey) const { return absl::StrCat(prefix_, "survey/", survey); }
  std::string AnswerKey(int64_t survey, int rank) const {
    return absl::StrCat(prefix_, "survey/", survey, "/", rank);
  }

  void Answer() {
    for (int64_t survey = 1; !stopped_;) {
      const absl::Status asked = answering_->Wait({SurveyKey(survey)}, kPollEvery * 25);
      if (absl::IsDeadlineExceeded(asked)) continue;
      if (!asked.ok()) return;  // the store is gone: the job is ending
      if (!answering_->Set(AnswerKey(survey, rank_), Encode(whereabouts_->Now())).ok()) return;
      ++survey;
    }
  }
  std::vector<std::optional<Whereabouts::Snapshot>> Gather() const override;

  std::unique_ptr<TcpStore> answering_;
  std::unique_ptr<TcpStore> asking_;
  const std::string prefix_;
  std::thread thread_;
};

std::vector<std::optional<Whereabouts::Snapshot>> MpiWatchdog::Gather() const {
  std::vector<std::optional<Whereabouts::Snapshot>> answers(size_);
  const char query = 0;
  for (int other = 0; other < size_; ++other) {
    if (other == rank_) continue;
    MPI_Request request;
    MPI_Isend(&query, 1, MPI_BYTE, other, kQueryTag, comm_, &request);
    MPI_Request_free(&request);  // a byte goes out eagerly; a dead rank's is never received
  }
  int pending = size_ - 1;
  const auto deadline = std::chrono::steady_clock::now() + kAnswerWithin;
  while (pending > 0 && std::chrono::steady_clock::now() < deadline) {
    int ready = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kAnswerTag, comm_, &ready, &status);
    if (!ready) {
      std::this_thread::sleep_for(kPollEvery);
      continue;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_CHAR, &bytes);
    std::string text(bytes, '\0');
    MPI_Recv(text.data(), bytes, MPI_CHAR, status.MPI_SOURCE, kAnswerTag, comm_, MPI_STATUS_IGNORE);
    if (!answers[status.MPI_SOURCE].has_value()) --pending;
    answers[status.MPI_SOURCE] = Decode(text);
  }
  return answers;
}

// Surveys are numbered by a counter in the store, so two ranks that time out together ask
// one after the other; every watchdog answers them in order.
std::vector<std::optional<Whereabouts::Snapshot>> StoreWatchdog::Gather() const {
  std::vector<std::optional<Whereabouts::Snapshot>> answers(size_);
  absl::StatusOr<int64_t> survey = asking_->Add(prefix_ + "surveys", 1);
  if (!survey.ok() || !asking_->Set(SurveyKey(*survey), "").ok()) return answers;
  std::vector<std::string> keys;
  for (int other = 0; other < size_; ++other) keys.push_back(AnswerKey(*survey, other));
  asking_->Wait(keys, kAnswerWithin).IgnoreError();  // the silent ranks stay nullopt
  for (int other = 0; other < size_; ++other) {
    absl::StatusOr<bool> answered = asking_->Check({keys[other]});
    if (!answered.ok() || !*answered) continue;
    absl::StatusOr<std::string> text = asking_->Get(keys[other]);
    if (text.ok()) answers[other] = Decode(*text);
  }
  return answers;
}

}  // namespace

std::string Watchdog::DescribeWhereRanksAre(int64_t waited) const {
  if (stopped_) return "";
  std::vector<std::optional<Whereabouts::Snapshot>> answers = Gather();
  answers[rank_] = whereabouts_->Now();
  std::vector<std::string> lines = {"; where each rank is:"};
  std::vector<int> missing;
  for (int other = 0; other < size_; ++other) {
    if (!answers[other].has_value()) {
      lines.push_back(absl::StrCat("  rank ", other, ": unresponsive (no answer within ",
                                   kAnswerWithin.count(), " s)"));
      missing.push_back(other);
    } else {
      lines.push_back(DescribeRank(other, *answers[other], waited));
      if (answers[other]->issued < waited) missing.push_back(other);
    }
  }
  lines.push_back(missing.empty() ? absl::StrCat("  every rank issued collective #", waited)
                                  : absl::StrCat("  not at collective #", waited, ": rank(s) ",
                                                 absl::StrJoin(missing, ", ")));
  return absl::StrJoin(lines, "\n");
}

absl::StatusOr<std::shared_ptr<Watchdog>> Watchdog::OverMpi() {
  int size = 0, thread_level = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Query_thread(&thread_level);
  if (size < 2 || thread_level < MPI_THREAD_MULTIPLE) return nullptr;
  MPI_Comm comm;
  MPI_RETURN_IF_ERROR(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return std::make_shared<MpiWatchdog>(comm, rank, size);
}

absl::StatusOr<std::shared_ptr<Watchdog>> Watchdog::OverStore(const std::string& host, int port,
                                                              const std::string& prefix, int rank,
                                                              int size,
                                                              std::chrono::milliseconds timeout) {
  if (size < 2) return nullptr;
  LS_ASSIGN_OR_RETURN(std::unique_ptr<TcpStore> answering, TcpStore::Connect(host, port, timeout));
  LS_ASSIGN_OR_RETURN(std::unique_ptr<TcpStore> asking, TcpStore::Connect(host, port, timeout));
  return std::make_shared<StoreWatchdog>(std::move(answering), std::move(asking),
                                         prefix + "watchdog/", rank, size);
}

std::string DescribeWhereRanksAre(const Watchdog* watchdog, int64_t waited) {
  return watchdog != nullptr ? watchdog->DescribeWhereRanksAre(waited) : "";
}

std::shared_ptr<Whereabouts> WhereaboutsFor(const Watchdog* watchdog) {
  return watchdog != nullptr ? watchdog->whereabouts() : std::make_shared<Whereabouts>();
}

}  // namespace lockstep::parallel
