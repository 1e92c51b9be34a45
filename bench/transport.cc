#include "bench/transport.h"

#include <mpi.h>

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/host_name.h"
#include "core/tensor.h"

namespace lockstep::bench {
namespace {

// Bytes of a host name on the wire, its terminating zero included (POSIX's HOST_NAME_MAX is 255).
constexpr int64_t kNameBytes = 256;

// The value of the string control variable `name` ("" where MPI_T does not have it).
std::string ReadControlVariable(const char* name) {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "";
  std::string value;
  int index = 0;
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_get_index(name, &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
    std::vector<char> text(static_cast<size_t>(count) + 1, '\0');
    if (MPI_T_cvar_read(handle, text.data()) == MPI_SUCCESS) value = text.data();
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
  return value;
}

// Whether an Open MPI selection ("a,b" includes only those, "^a,b" all but those, "" all)
// admits `component`.
bool Admits(const std::string& selection, const std::string& component) {
  const bool excludes = !selection.empty() && selection[0] == '^';
  const std::vector<std::string> listed =
      absl::StrSplit(excludes ? selection.substr(1) : selection, ',', absl::SkipEmpty());
  if (listed.empty()) return true;
  const bool named = std::find(listed.begin(), listed.end(), component) != listed.end();
  return named != excludes;
}

// Ranks per host, in the order the hosts' first ranks come, from every rank's host name
// (HostName, which is also what Open MPI's MPI_Get_processor_name gives).
absl::StatusOr<std::vector<int>> RanksPerHost(parallel::CommGroup& group) {
  const int size = group.communicator->size();
  Tensor name = Tensor::Zeros({kNameBytes}, DType::kU8);
  HostName().copy(static_cast<char*>(name.raw_data()), kNameBytes - 1);
  Tensor names = Tensor::Zeros({size * kNameBytes}, DType::kU8);
  LS_RETURN_IF_ERROR(group.RunNow(
      "AllGather", [&group, &name, &names] { return group.communicator->AllGather(name, names); }));
  std::vector<std::string> hosts;
  std::map<std::string, int> ranks;
  for (int rank = 0; rank < size; ++rank) {
    const std::string host(static_cast<const char*>(names.raw_data()) + rank * kNameBytes);
    if (ranks[host]++ == 0) hosts.push_back(host);
  }
  std::vector<int> result;
  for (const std::string& host : hosts) result.push_back(ranks[host]);
  return result;
}

}  // namespace

absl::StatusOr<std::string> DescribeTransport(const parallel::Context& context,
                                              parallel::CommGroup& group) {
  LS_ASSIGN_OR_RETURN(std::vector<int> ranks_per_host, RanksPerHost(group));
  std::string line = absl::StrFormat("transport: hosts=%d ranks_per_host=%s", ranks_per_host.size(),
                                     absl::StrJoin(ranks_per_host, ","));
  std::string within_host = "tcp";
  std::string between_hosts = "tcp";
  if (context.launched_by_mpi()) {
    const std::string btl = ReadControlVariable("btl");
    const std::string pml = ReadControlVariable("pml");
    between_hosts = Admits(btl, "tcp") ? "tcp" : "other";
    within_host = Admits(btl, "vader") ? "vader" : between_hosts;
    absl::StrAppend(&line, " btl=", btl.empty() ? "<all>" : btl,
                    " pml=", pml.empty() ? "<all>" : pml);
  } else {
    // gloo's TCP transport (gloo_communicator.cc), loopback within a host; a world of one's
    // communicator talks to no one.
    const std::string backend = group.communicator->backend();
    if (backend != "gloo") within_host = between_hosts = backend;
    absl::StrAppend(&line, " backend=", backend);
  }
  absl::StrAppend(&line, " within_host=", within_host);
  if (ranks_per_host.size() > 1) absl::StrAppend(&line, " between_hosts=", between_hosts);
  return line;
}

}  // namespace lockstep::bench
