#pragma once

// The .meta file: graph/graph.proto of the compiled training graph (nodes, op types,
// attributes, AllReduce fusion groups, parameters, fingerprint; no weights), and its summary.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.pb.h"

namespace lockstep::ckpt {

// Writes the graph atomically, serialized deterministically (equal graphs, equal files).
absl::Status WriteGraphMeta(const std::string& path, const lockstep::proto::GraphDef& graph);
absl::StatusOr<lockstep::proto::GraphDef> ReadGraphMeta(const std::string& path);

struct FusionGroup {
  int64_t group = 0;
  int nodes = 0;      // AllReduce nodes in the group
  int64_t bytes = 0;  // the sum of their "bytes" attributes
};

struct GraphSummary {
  std::map<std::string, int> op_counts;    // nodes by op type
  std::vector<FusionGroup> fusion_groups;  // by group id, from AllReduce nodes' attributes
  int64_t parameter_elements = 0;
  int64_t parameter_bytes = 0;
  std::string fingerprint;           // as stored
  bool fingerprint_matches = false;  // the stored one is the graph's own
};

// Of a graph that ReadGraphMeta accepted (it rejects sums that overflow) or ToProto made.
GraphSummary SummarizeGraph(const lockstep::proto::GraphDef& graph);

}  // namespace lockstep::ckpt
