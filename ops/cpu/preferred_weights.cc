#include "ops/cpu/preferred_weights.h"

#include <algorithm>

#include "core/allocator.h"

namespace lockstep::dnnl_util {

PreferredWeights::PreferredWeights(const dnnl::memory::desc& stored,
                                   const dnnl::memory::desc& preferred, bool into_preferred,
                                   size_t primitive_scratchpad)
    : into_preferred_(into_preferred), slot_offset_(AlignUp(primitive_scratchpad)) {
  if (stored == preferred) return;
  const dnnl::memory::desc& from = into_preferred ? stored : preferred;
  const dnnl::memory::desc& to = into_preferred ? preferred : stored;
  reorder_ = ReorderStep(from, to);
  // The reorder and the primitive run one after the other, so they share the scratchpad.
  slot_offset_ = AlignUp(std::max(primitive_scratchpad, reorder_.scratchpad_bytes()));
  slot_bytes_ = preferred.get_size();
  active_ = true;
}

absl::Status PreferredWeights::Reorder(void* stored, void* workspace) {
  if (!active_) return absl::OkStatus();
  void* slot = Buffer(stored, workspace);
  return reorder_.Run({{DNNL_ARG_FROM, into_preferred_ ? stored : slot},
                       {DNNL_ARG_TO, into_preferred_ ? slot : stored}},
                      workspace);
}

}  // namespace lockstep::dnnl_util
