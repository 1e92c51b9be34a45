#include "bench/mpi_transport.h"

#include <mpi.h>

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "parallel/mpi_communicator.h"

namespace lockstep::bench {
namespace {

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

// Ranks per host, in the order the hosts' first ranks come, from every rank's processor name.
absl::StatusOr<std::vector<int>> RanksPerHost() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_RETURN_IF_ERROR(MPI_Get_processor_name(name, &length));
  int size = 0;
  MPI_RETURN_IF_ERROR(MPI_Comm_size(MPI_COMM_WORLD, &size));
  std::vector<char> names(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_RETURN_IF_ERROR(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(),
                                    MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> hosts;
  std::map<std::string, int> ranks;
  for (int rank = 0; rank < size; ++rank) {
    const std::string host(&names[static_cast<size_t>(rank) * MPI_MAX_PROCESSOR_NAME]);
    if (ranks[host]++ == 0) hosts.push_back(host);
  }
  std::vector<int> result;
  for (const std::string& host : hosts) result.push_back(ranks[host]);
  return result;
}

}  // namespace

absl::StatusOr<std::string> DescribeMpiTransport() {
  LS_ASSIGN_OR_RETURN(std::vector<int> ranks_per_host, RanksPerHost());
  const std::string btl = ReadControlVariable("btl");
  const std::string pml = ReadControlVariable("pml");
  const char* network = Admits(btl, "tcp") ? "tcp" : "other";
  std::string line = absl::StrFormat(
      "transport: hosts=%d ranks_per_host=%s btl=%s pml=%s within_host=%s", ranks_per_host.size(),
      absl::StrJoin(ranks_per_host, ","), btl.empty() ? "<all>" : btl, pml.empty() ? "<all>" : pml,
      Admits(btl, "vader") ? "vader" : network);
  if (ranks_per_host.size() > 1) absl::StrAppend(&line, " between_hosts=", network);
  return line;
}

}  // namespace lockstep::bench
