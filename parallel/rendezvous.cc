#include "parallel/rendezvous.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "parallel/gloo_communicator.h"

namespace lockstep::parallel {
namespace {

constexpr auto kLingerAfterFailure = std::chrono::seconds(1);

// The address of this host that the other ranks reach: loopback for a job on one host, else
// the one this rank reaches the master from.
std::string ReachableAddress(const Rendezvous& rendezvous, const TcpStore& store) {
  const std::string& master = rendezvous.master_addr;
  if (master == "localhost" || master.rfind("127.", 0) == 0) return "127.0.0.1";
  return store.local_address();
}

std::string SizeKey(const std::string& prefix, int rank) {
  return absl::StrCat(prefix, "world_size/", rank);
}

// Every rank publishes its world size and waits for every other rank's; the error names the
// ranks that never came, or those whose world size differs from this rank's.
absl::Status Arrive(const Rendezvous& rendezvous, TcpStore& store, const std::string& prefix,
                    std::chrono::milliseconds timeout) {
  const std::string mine = absl::StrCat(rendezvous.size);
  LS_RETURN_IF_ERROR(store.Set(SizeKey(prefix, rendezvous.rank), mine));
  // Rank 0 comes first (it usually serves the store): a rank started with another world size
  // says so at once, not after waiting for ranks that will never come.
  LS_ASSIGN_OR_RETURN(std::string first, store.Get(SizeKey(prefix, 0)));
  if (first != mine) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ranks were started with different world sizes (WORLD_SIZE): rank ",
                     rendezvous.rank, " has ", mine, ", rank 0 has ", first));
  }
  std::vector<std::string> keys;
  for (int rank = 0; rank < rendezvous.size; ++rank) keys.push_back(SizeKey(prefix, rank));
  const absl::Status everyone = store.Wait(keys, timeout);
  std::vector<std::string> missing, different;
  for (int rank = 0; rank < rendezvous.size; ++rank) {
    LS_ASSIGN_OR_RETURN(bool arrived, store.Check({keys[rank]}));
    if (!arrived) {
      missing.push_back(absl::StrCat(rank));
      continue;
    }
    LS_ASSIGN_OR_RETURN(std::string size, store.Get(keys[rank]));
    if (size != mine) different.push_back(absl::StrCat("rank ", rank, " has ", size));
  }
  if (!different.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ranks were started with different world sizes (WORLD_SIZE): rank ",
                     rendezvous.rank, " has ", mine, ", ", absl::StrJoin(different, ", ")));
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(absl::StrCat(
        "rank(s) ", absl::StrJoin(missing, ", "), " of ", rendezvous.size,
        " did not arrive at the rendezvous store at ", store.address(),
        rendezvous.run_id.empty() ? "" : absl::StrCat(" (run '", rendezvous.run_id, "')"),
        " within ", timeout.count() / 1000.0,
        " s: a rank that failed to start, or one started with another MASTER_ADDR, "
        "MASTER_PORT or run id"));
  }
  return everyone;
}

}  // namespace

absl::StatusOr<Meeting> MeetTheOtherRanks(const Rendezvous& rendezvous,
                                          std::chrono::milliseconds timeout) {
  Meeting meeting;
  if (rendezvous.rank == 0 && !rendezvous.agent_store) {
    LS_ASSIGN_OR_RETURN(meeting.server, TcpStoreServer::Start(rendezvous.master_port));
  }
  LS_ASSIGN_OR_RETURN(meeting.store,
                      TcpStore::Connect(rendezvous.master_addr, rendezvous.master_port, timeout));
  meeting.prefix = absl::StrCat("lockstep/", rendezvous.run_id, "/", rendezvous.restart_count, "/");
  const std::string& prefix = meeting.prefix;
  const absl::Status arrived = Arrive(rendezvous, *meeting.store, prefix, timeout);
  if (!arrived.ok()) {
    // The other ranks find out the same from the store: it stays up a moment for them to read.
    if (meeting.server != nullptr) std::this_thread::sleep_for(kLingerAfterFailure);
    return arrived;
  }
  LS_ASSIGN_OR_RETURN(meeting.host, GlooCommunicator::Create(
                                        rendezvous.rank, rendezvous.size, *meeting.store, prefix,
                                        ReachableAddress(rendezvous, *meeting.store), timeout));
  return meeting;
}

}  // namespace lockstep::parallel
