#include "parallel/ops/bucket_span.h"

#include <algorithm>
#include <numeric>

#include "core/allocator.h"

namespace lockstep::parallel {

Span ContiguousSpan(const Node& node, size_t alignment) {
  std::vector<size_t> order(node.inputs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return node.inputs[a]->alloc.offset < node.inputs[b]->alloc.offset;
  });
  const Allocation first = node.inputs[order[0]]->alloc;
  size_t end = first.offset;
  for (size_t i : order) {
    const Value& value = *node.inputs[i];
    if (value.alloc.region != first.region || value.alloc.offset != AlignUp(end, alignment))
      return {};
    end = value.alloc.offset + value.bytes();
  }
  const size_t element = SizeOf(node.inputs[0]->dtype());
  return {true, order[0], static_cast<int64_t>((end - first.offset) / element)};
}

std::vector<Tensor> BucketTensors(const Span& span, const std::vector<Tensor>& outputs) {
  if (!span.contiguous) return outputs;
  const Tensor& first = outputs[span.first_input];
  return {first.View(0, {span.elements}, first.dtype())};
}

}  // namespace lockstep::parallel
