#pragma once

// A bucket that crosses the wire in a narrower dtype than its float32 gradients (the AllReduce
// node's "wire_dtype", parallel/wire_dtype.h), the same way on every device: the gradients are
// rounded into one buffer of the wire dtype, that buffer is all-reduced, and the result is
// converted back into the gradients. The buffer is the kernel's own (persistent), since the
// reduction may overlap the rest of the backward.

#include <memory>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"
#include "parallel/communicator.h"
#include "parallel/ops/bucket_span.h"

namespace lockstep::parallel {

// Converts `from` into `to` element-wise (same element count, f32 <-> bf16/f16), queued on
// `stream` where the device has one (nullptr on the host).
using ConvertFn = absl::Status (*)(const Tensor& from, const Tensor& to, void* stream);

class WireBucket {
 public:
  // Null when `node` reduces in its inputs' own dtype; else a wire buffer for what it reduces
  // (the span when contiguous, else every input) on `device`.
  static absl::StatusOr<std::unique_ptr<WireBucket>> For(const Node& node, const Span& span,
                                                         Device device);

  // `tensors`: what the node reduces (BucketTensors), bound once, since they never move.
  void Bind(const std::vector<Tensor>& tensors);
  // What goes over the wire: (elements) in the wire dtype.
  const Tensor& wire() const { return wire_; }
  absl::Status ToWire(ConvertFn convert, void* stream) const;
  absl::Status FromWire(ConvertFn convert, void* stream) const;
  // On a host communicator, whose AllReduce returns when done: ToWire, the reduction, FromWire.
  absl::Status AllReduceOnHost(Communicator& communicator, ReduceOp op) const;

 private:
  explicit WireBucket(Tensor wire) : wire_(std::move(wire)) {}

  Tensor wire_;
  std::vector<Tensor> tensors_;
  std::vector<Tensor> views_;  // of wire_, one per tensor, back to back
};

// ConvertFn on the host, rounding to nearest even (core/half.h).
absl::Status ConvertOnHost(const Tensor& from, const Tensor& to, void* stream);

}  // namespace lockstep::parallel
