#include "parallel/agree.h"

#include <algorithm>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tensor.h"

namespace lockstep::parallel {
namespace {

constexpr char kAgreedPayload[] = "lockstep/agreed-across-ranks";

// Every rank's int64 `value`, in rank order.
absl::StatusOr<std::vector<int64_t>> GatherInts(int64_t value, Communicator& world) {
  Tensor mine = Tensor::Zeros({1}, DType::kI64);
  *mine.data<int64_t>() = value;
  Tensor all = Tensor::Zeros({world.size()}, DType::kI64);
  LS_RETURN_IF_ERROR(world.AllGather(mine, all));
  return std::vector<int64_t>(all.data<int64_t>(), all.data<int64_t>() + world.size());
}

// Every rank's status: the codes, then the messages padded to the longest.
absl::StatusOr<std::vector<absl::Status>> GatherStatuses(const absl::Status& local,
                                                         Communicator& world) {
  LS_ASSIGN_OR_RETURN(std::vector<int64_t> codes,
                      GatherInts(static_cast<int64_t>(local.code()), world));
  LS_ASSIGN_OR_RETURN(std::vector<int64_t> lengths,
                      GatherInts(static_cast<int64_t>(local.message().size()), world));
  const int64_t longest = std::max<int64_t>(1, *std::max_element(lengths.begin(), lengths.end()));
  Tensor mine = Tensor::Zeros({longest}, DType::kU8);
  // string_view::copy, not memcpy: an OK status's message is an empty view whose data() may be
  // null, and memcpy from null is undefined even for 0 bytes.
  local.message().copy(static_cast<char*>(mine.raw_data()), local.message().size());
  Tensor all = Tensor::Zeros({longest * world.size()}, DType::kU8);
  LS_RETURN_IF_ERROR(world.AllGather(mine, all));
  std::vector<absl::Status> statuses;
  for (int rank = 0; rank < world.size(); ++rank) {
    const char* message = static_cast<const char*>(all.raw_data()) + rank * longest;
    statuses.emplace_back(static_cast<absl::StatusCode>(codes[rank]),
                          std::string(message, lengths[rank]));
  }
  return statuses;
}

}  // namespace

std::string DescribeRankErrors(const std::vector<absl::Status>& statuses) {
  struct Group {
    std::string message;
    std::vector<int> ranks;
  };
  std::vector<Group> groups;  // distinct messages, in the order of their first rank
  bool all_failed = true;
  for (int rank = 0; rank < static_cast<int>(statuses.size()); ++rank) {
    if (statuses[rank].ok()) {
      all_failed = false;
      continue;
    }
    const std::string message(statuses[rank].message());
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const Group& g) { return g.message == message; });
    if (group == groups.end()) {
      groups.push_back({message, {rank}});
    } else {
      group->ranks.push_back(rank);
    }
  }
  if (all_failed && groups.size() == 1) return groups[0].message;
  std::vector<std::string> parts;
  for (const Group& group : groups) {
    parts.push_back(absl::StrCat(group.ranks.size() == 1 ? "rank " : "ranks ",
                                 absl::StrJoin(group.ranks, ", "), ": ", group.message));
  }
  return absl::StrJoin(parts, "; ");
}

absl::Status AgreeAcrossRanks(const absl::Status& local, Communicator& world,
                              absl::string_view context) {
  LS_ASSIGN_OR_RETURN(std::vector<absl::Status> statuses, GatherStatuses(local, world));
  auto failed = std::find_if(statuses.begin(), statuses.end(),
                             [](const absl::Status& status) { return !status.ok(); });
  if (failed == statuses.end()) return absl::OkStatus();
  const std::string described = DescribeRankErrors(statuses);
  absl::Status agreed(failed->code(),
                      context.empty() ? described : absl::StrCat(context, ": ", described));
  agreed.SetPayload(kAgreedPayload, absl::Cord());
  return agreed;
}

bool IsAgreedError(const absl::Status& status) {
  return status.GetPayload(kAgreedPayload).has_value();
}

}  // namespace lockstep::parallel
