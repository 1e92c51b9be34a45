#include <algorithm>
#include <map>

#include "absl/strings/str_join.h"
#include "core/allocator.h"
#include "core/backend.h"
#include "graph/op_registry.h"
#include "parallel/passes/passes.h"
#include "parallel/wire_dtype.h"

namespace lockstep::parallel {
namespace {

// One parameter's unfused AllReduce.
struct Member {
  Node* node;
  size_t bytes;  // the gradient's bytes, padded as the memory plan pads them
};

// Merges the single-gradient AllReduce nodes into buckets. The memory plan lays gradients out
// in parameter order, so a bucket of consecutive parameters is one byte range of the gradient
// buffer. Buckets are cut from the last parameter backwards, the order in which the backward
// produces gradients (as PyTorch DDP and MindSpore order them), and each fused node runs as soon
// as its last gradient is ready.
class FuseAllReducePass : public Pass {
 public:
  absl::string_view name() const override { return "FuseAllReduce"; }

  absl::Status Run(Graph& graph, PassContext& ctx) override {
    LS_ASSIGN_OR_RETURN(const ParallelOptions* options,
                        ctx.config.Require<ParallelOptions>(name()));
    LS_ASSIGN_OR_RETURN(const Backend* backend, FindBackend(ctx.device.type));
    std::vector<Member> members = MembersInBackwardOrder(graph, backend->alignment());
    if (members.empty()) {
      return absl::FailedPreconditionError(
          "no unfused gradient AllReduce to fuse: run InsertAllReduce first");
    }
    LS_ASSIGN_OR_RETURN(std::vector<size_t> starts, BucketStarts(members, *options));
    starts.push_back(members.size());
    for (size_t b = 0; b + 1 < starts.size(); ++b) {
      std::vector<Member> bucket(members.begin() + starts[b], members.begin() + starts[b + 1]);
      LS_RETURN_IF_ERROR(Fuse(graph, bucket, static_cast<int64_t>(b + 1)));
    }
    return absl::OkStatus();
  }

 private:
  static std::vector<Member> MembersInBackwardOrder(const Graph& graph, size_t alignment) {
    std::map<const Value*, Node*> all_reduce_of;  // gradient -> its AllReduce
    for (const auto& node : graph.nodes()) {
      if (node->op->name() == "AllReduce" && node->attrs.GetInt("fusion") == 0 &&
          node->inputs.size() == 1) {
        all_reduce_of[node->output()] = node.get();
      }
    }
    std::vector<Member> members;
    std::vector<Node*> parameters = graph.InputNodes(InputRole::kParameter);
    for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {
      const GraphOutput* gradient = graph.FindGradientOutput(*it);
      if (gradient == nullptr) continue;
      auto found = all_reduce_of.find(gradient->value);
      if (found == all_reduce_of.end()) continue;
      members.push_back({found->second, AlignUp(gradient->value->bytes(), alignment)});
    }
    return members;
  }

  // Index of the first member of each bucket.
  static absl::StatusOr<std::vector<size_t>> BucketStarts(const std::vector<Member>& members,
                                                          const ParallelOptions& options) {
    std::vector<size_t> starts = {0};
    if (!options.all_reduce_fusion_config.empty()) {
      for (int index : options.all_reduce_fusion_config) {
        if (index <= static_cast<int>(starts.back()) || index >= static_cast<int>(members.size())) {
          return absl::InvalidArgumentError(absl::StrCat(
              "all_reduce_fusion_config {", absl::StrJoin(options.all_reduce_fusion_config, ", "),
              "} must be increasing split indices in (0, ", members.size(), "): the graph has ",
              members.size(), " gradients"));
        }
        starts.push_back(static_cast<size_t>(index));
      }
      return starts;
    }
    const double threshold = options.fusion_threshold_mb * 1024.0 * 1024.0;
    double filled = 0.0;
    for (size_t i = 0; i < members.size(); ++i) {
      if (filled > 0.0 && filled + static_cast<double>(members[i].bytes) > threshold) {
        starts.push_back(i);
        filled = 0.0;
      }
      filled += static_cast<double>(members[i].bytes);
    }
    return starts;
  }

  // Replaces the bucket's nodes by one AllReduce placed where the last of them was; its inputs
  // are in memory order (parameter order), so the bucket reads as one byte range. Its "bytes"
  // are the range's (padding included) in the wire dtype.
  static absl::Status Fuse(Graph& graph, std::vector<Member>& bucket, int64_t fusion) {
    std::reverse(bucket.begin(), bucket.end());
    std::vector<Value*> inputs;
    std::vector<TensorType> types;
    size_t position = 0;
    int64_t bytes = 0;
    for (const Member& member : bucket) {
      inputs.push_back(member.node->inputs[0]);
      types.push_back(member.node->inputs[0]->type);
      position = std::max(position, graph.PositionOf(member.node));
      bytes += static_cast<int64_t>(member.bytes);
    }
    Attrs attrs = bucket[0].node->attrs;
    attrs.Set("fusion", fusion);
    LS_ASSIGN_OR_RETURN(DType wire, ParseWireDType(types[0].dtype, attrs.GetString("wire_dtype")));
    attrs.Set("bytes", bytes / static_cast<int64_t>(SizeOf(types[0].dtype)) *
                           static_cast<int64_t>(SizeOf(wire)));
    Node* fused = graph.InsertNode(position + 1, bucket[0].node->op,
                                   absl::StrCat("allreduce/fusion_", fusion), std::move(attrs),
                                   std::move(inputs), types);
    std::map<const Value*, Value*> replacement;
    for (size_t i = 0; i < bucket.size(); ++i)
      replacement[bucket[i].node->output()] = fused->output(i);
    graph.ReplaceUses(replacement);
    graph.RemoveNodes([&](const Node& node) {
      return std::any_of(bucket.begin(), bucket.end(),
                         [&](const Member& m) { return m.node == &node; });
    });
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseAllReducePass() { return std::make_unique<FuseAllReducePass>(); }

}  // namespace lockstep::parallel
