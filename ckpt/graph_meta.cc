#include "ckpt/graph_meta.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "core/file_io.h"
#include "core/logging.h"
#include "core/tensor.h"
#include "graph/serialize.h"

namespace lockstep::ckpt {
namespace {

constexpr char kAllReduce[] = "AllReduce";
constexpr char kFusionGroup[] = "fusion";  // the attributes FuseAllReduce sets
constexpr char kFusionBytes[] = "bytes";

// The summary's counts and sums. A corrupt file may hold any integers, so each sum is checked and
// an overflow (or a negative dimension) is an error, not undefined behaviour.
absl::Status AddUp(const lockstep::proto::GraphDef& graph, GraphSummary* summary) {
  std::map<int64_t, FusionGroup> groups;
  for (const lockstep::proto::NodeDef& node : graph.nodes()) {
    ++summary->op_counts[node.op()];
    const auto group = node.attrs().find(kFusionGroup);
    if (node.op() != kAllReduce || group == node.attrs().end()) continue;
    FusionGroup& fusion = groups[group->second.i()];
    fusion.group = group->second.i();
    ++fusion.nodes;
    const auto bytes = node.attrs().find(kFusionBytes);
    if (bytes != node.attrs().end() &&
        __builtin_add_overflow(fusion.bytes, bytes->second.i(), &fusion.bytes)) {
      return absl::DataLossError(
          absl::StrCat("the bytes of AllReduce fusion group ", fusion.group, " overflow 64 bits"));
    }
  }
  for (const auto& [id, group] : groups) summary->fusion_groups.push_back(group);
  for (const lockstep::proto::Parameter& parameter : graph.parameters()) {
    int64_t elements = 1;
    for (int64_t dim : parameter.dims()) {
      if (dim < 0 || __builtin_mul_overflow(elements, dim, &elements)) {
        return absl::DataLossError(
            absl::StrCat("parameter '", parameter.name(), "': dims ",
                         ShapeToString({parameter.dims().begin(), parameter.dims().end()}),
                         " are negative or hold over 2^63 elements"));
      }
    }
    if (__builtin_add_overflow(summary->parameter_elements, elements,
                               &summary->parameter_elements) ||
        __builtin_add_overflow(summary->parameter_bytes, parameter.bytes(),
                               &summary->parameter_bytes)) {
      return absl::DataLossError("the parameters' sizes overflow 64 bits");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteGraphMeta(const std::string& path, const lockstep::proto::GraphDef& graph) {
  std::string bytes;
  {
    // Map fields (attributes) serialize in hash order unless asked otherwise.
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!graph.SerializeToCodedStream(&coded)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": the graph does not serialize"));
    }
  }
  return WriteFileAtomically(path, bytes);
}

absl::StatusOr<lockstep::proto::GraphDef> ReadGraphMeta(const std::string& path) {
  LS_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  lockstep::proto::GraphDef graph;
  if (bytes.empty() || !graph.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat(path, ": not a graph meta file (graph.proto)"));
  }
  GraphSummary sums;
  if (absl::Status status = AddUp(graph, &sums); !status.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": not a valid graph: ", status.message()));
  }
  return graph;
}

GraphSummary SummarizeGraph(const lockstep::proto::GraphDef& graph) {
  GraphSummary summary;
  const absl::Status sums = AddUp(graph, &summary);
  LS_CHECK(sums.ok()) << sums << " (ReadGraphMeta rejects such a graph)";
  summary.fingerprint = graph.fingerprint();
  summary.fingerprint_matches = IsOwnFingerprint(graph);
  return summary;
}

}  // namespace lockstep::ckpt
