#include "ckpt/graph_meta.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "ckpt/file_io.h"
#include "core/tensor.h"
#include "graph/serialize.h"

namespace lockstep::ckpt {
namespace {

constexpr char kAllReduce[] = "AllReduce";
constexpr char kFusionGroup[] = "fusion";  // the attributes FuseAllReduce sets
constexpr char kFusionBytes[] = "bytes";

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
  return graph;
}

GraphSummary SummarizeGraph(const lockstep::proto::GraphDef& graph) {
  GraphSummary summary;
  std::map<int64_t, FusionGroup> groups;
  for (const lockstep::proto::NodeDef& node : graph.nodes()) {
    ++summary.op_counts[node.op()];
    const auto group = node.attrs().find(kFusionGroup);
    if (node.op() != kAllReduce || group == node.attrs().end()) continue;
    FusionGroup& fusion = groups[group->second.i()];
    fusion.group = group->second.i();
    ++fusion.nodes;
    const auto bytes = node.attrs().find(kFusionBytes);
    if (bytes != node.attrs().end()) fusion.bytes += bytes->second.i();
  }
  for (const auto& [id, group] : groups) summary.fusion_groups.push_back(group);
  for (const lockstep::proto::Parameter& parameter : graph.parameters()) {
    summary.parameter_elements += NumElements({parameter.dims().begin(), parameter.dims().end()});
    summary.parameter_bytes += static_cast<int64_t>(parameter.bytes());
  }
  summary.fingerprint = graph.fingerprint();
  summary.fingerprint_matches = Fingerprint(graph) == graph.fingerprint();
  return summary;
}

}  // namespace lockstep::ckpt
