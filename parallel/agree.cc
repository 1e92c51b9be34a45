#include "parallel/agree.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
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

}  // namespace

// The lengths, then the texts padded to the longest.
absl::StatusOr<std::vector<std::string>> GatherStrings(absl::string_view text,
                                                       Communicator& world) {
  LS_ASSIGN_OR_RETURN(std::vector<int64_t> lengths,
                      GatherInts(static_cast<int64_t>(text.size()), world));
  const int64_t longest = std::max<int64_t>(1, *std::max_element(lengths.begin(), lengths.end()));
  Tensor mine = Tensor::Zeros({longest}, DType::kU8);
  // string_view::copy, not memcpy: an empty view's data() (an OK status's message) may be null,
  // and memcpy from null is undefined even for 0 bytes.
  text.copy(static_cast<char*>(mine.raw_data()), text.size());
  Tensor all = Tensor::Zeros({longest * world.size()}, DType::kU8);
  LS_RETURN_IF_ERROR(world.AllGather(mine, all));
  std::vector<std::string> texts;
  for (int rank = 0; rank < world.size(); ++rank) {
    texts.emplace_back(static_cast<const char*>(all.raw_data()) + rank * longest, lengths[rank]);
  }
  return texts;
}

namespace {

// Every rank's status.
absl::StatusOr<std::vector<absl::Status>> GatherStatuses(const absl::Status& local,
                                                         Communicator& world) {
  LS_ASSIGN_OR_RETURN(std::vector<int64_t> codes,
                      GatherInts(static_cast<int64_t>(local.code()), world));
  LS_ASSIGN_OR_RETURN(std::vector<std::string> messages, GatherStrings(local.message(), world));
  std::vector<absl::Status> statuses;
  for (int rank = 0; rank < world.size(); ++rank) {
    statuses.emplace_back(static_cast<absl::StatusCode>(codes[rank]), messages[rank]);
  }
  return statuses;
}

absl::Status Agreed(absl::StatusCode code, std::string message) {
  absl::Status agreed(code, message);
  agreed.SetPayload(kAgreedPayload, absl::Cord());
  return agreed;
}

// "rank 0" or "ranks 1, 3".
std::string Ranks(const std::vector<int>& ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", absl::StrJoin(ranks, ", "));
}

// "--lr (0.1 on rank 0; 0.2 on rank 1)" for each setting whose value differs between ranks.
std::string DescribeDifferences(const std::vector<std::string>& texts) {
  // Each rank's settings by name; the names in the order they first appear.
  std::vector<std::map<std::string, std::string>> by_rank;
  std::vector<std::string> names;
  for (const std::string& text : texts) {
    const std::vector<std::string> fields = absl::StrSplit(text, '\0');
    auto& settings = by_rank.emplace_back();
    for (size_t i = 0; i + 1 < fields.size(); i += 2) {
      if (std::find(names.begin(), names.end(), fields[i]) == names.end()) {
        names.push_back(fields[i]);
      }
      settings[fields[i]] = fields[i + 1];
    }
  }
  std::vector<std::string> differences;
  for (const std::string& name : names) {
    std::map<std::string, std::vector<int>> ranks_by_value;
    for (int rank = 0; rank < static_cast<int>(by_rank.size()); ++rank) {
      auto it = by_rank[rank].find(name);
      ranks_by_value[it == by_rank[rank].end() ? "(none)" : it->second].push_back(rank);
    }
    if (ranks_by_value.size() == 1) continue;
    std::vector<std::string> parts;
    for (const auto& [value, ranks] : ranks_by_value) {
      parts.push_back(absl::StrCat(value, " on ", Ranks(ranks)));
    }
    differences.push_back(absl::StrCat(name, " (", absl::StrJoin(parts, "; "), ")"));
  }
  return absl::StrJoin(differences, ", ");
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
    parts.push_back(absl::StrCat(Ranks(group.ranks), ": ", group.message));
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
  return Agreed(failed->code(),
                context.empty() ? described : absl::StrCat(context, ": ", described));
}

absl::Status AgreeOnSettings(const std::vector<Setting>& settings, Communicator& world,
                             absl::string_view what) {
  const absl::string_view separator("\0", 1);
  std::string mine;
  for (const auto& [name, value] : settings) {
    absl::StrAppend(&mine, name, separator, value, separator);
  }
  LS_ASSIGN_OR_RETURN(std::vector<std::string> texts, GatherStrings(mine, world));
  if (std::all_of(texts.begin(), texts.end(), [&](const std::string& t) { return t == mine; })) {
    return absl::OkStatus();
  }
  return Agreed(absl::StatusCode::kInvalidArgument,
                absl::StrCat(what, ": ", DescribeDifferences(texts)));
}

bool IsAgreedError(const absl::Status& status) {
  return status.GetPayload(kAgreedPayload).has_value();
}

}  // namespace lockstep::parallel
