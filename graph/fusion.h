#pragma once

// Fusion patterns: where one kernel computes what several nodes do, in a single pass over
// memory. The op family that owns the ops registers the pattern (REGISTER_FUSION); the
// FuseKernels pass applies it wherever the device has kernels for all of its fused ops, so a
// backend opts in by registering those kernels.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/builder.h"
#include "graph/graph.h"

namespace lockstep {

// What a rewrite sees and does. Readers are those of the graph as the pass found it; nodes are
// removed and uses replaced only after every rewrite has run.
class FusionContext {
 public:
  explicit FusionContext(Graph* graph);

  // Every node reading `value`.
  const std::vector<Node*>& AllReaders(const Value* value) const;
  // Readers of an intermediate value; empty for a graph output, which must stay as it is.
  const std::vector<Node*>& Readers(const Value* value) const;

  // The `op` node reading `x` and the `grad_op` node whose forward input (input 0) it is, when
  // they are all that read `x` (grad is null without a gradient); op is null otherwise.
  struct OpAndGrad {
    const Node* op = nullptr;
    Node* grad = nullptr;
  };
  OpAndGrad OnlyReaders(const Value* x, absl::string_view op, absl::string_view grad_op) const;

  // A builder whose nodes go right before `node` and are named beside it.
  Builder& Before(const Node& node);

  // Uses of old_node's outputs become uses of new_outputs, and old_node goes.
  void Replace(const Node& old_node, const std::vector<Value*>& new_outputs);
  // `node` goes: a fused node now computes what it did.
  void MarkFused(const Node& node) { fused_.insert(&node); }
  bool IsFused(const Node& node) const { return fused_.contains(&node); }

  const absl::Status& status() const { return builder_.status(); }
  const std::map<const Value*, Value*>& replacement() const { return replacement_; }

 private:
  Builder builder_;
  std::vector<std::vector<Node*>> readers_;
  std::set<const Value*> results_;
  std::map<const Value*, Value*> replacement_;
  std::set<const Node*> fused_;
};

// Rewrites the nodes around `anchor` when they match, leaving them as they are otherwise.
using FusionRewrite = std::function<void(FusionContext& ctx, const Node& anchor)>;

struct FusionPattern {
  std::string name;
  std::string anchor;                  // the op the rewrite starts from
  std::vector<std::string> fused_ops;  // ops the rewrite makes, whose kernels the device needs
  FusionRewrite rewrite;
};

class FusionRegistry {
 public:
  static FusionRegistry& Global();
  // Names are unique.
  bool Register(FusionPattern pattern);
  // The patterns anchored at `op`, in registration order.
  const std::vector<FusionPattern>& AnchoredAt(absl::string_view op) const;

 private:
  std::set<std::string> names_;
  std::map<std::string, std::vector<FusionPattern>, std::less<>> by_anchor_;
};

}  // namespace lockstep

// REGISTER_FUSION({.name = "BatchNormRelu", .anchor = "BatchNorm",
//                  .fused_ops = {"BatchNormRelu", "BatchNormReluGrad"}, .rewrite = F});
#define REGISTER_FUSION(...)                                                  \
  [[maybe_unused]] static const bool LS_FUSION_CONCAT(ls_fusion_, __LINE__) = \
      ::lockstep::FusionRegistry::Global().Register(::lockstep::FusionPattern __VA_ARGS__)
#define LS_FUSION_CONCAT_INNER(a, b) a##b
#define LS_FUSION_CONCAT(a, b) LS_FUSION_CONCAT_INNER(a, b)
