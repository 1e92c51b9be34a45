#pragma once

// Weights a oneDNN primitive wants in another layout than the graph keeps them in.

#include <oneapi/dnnl/dnnl.hpp>

#include "core/status.h"
#include "ops/cpu/dnnl_util.h"

namespace lockstep::dnnl_util {

// A slot in the kernel's scratch, after the scratchpads, holds the weights in the primitive's
// layout. Idle when the two layouts agree.
class PreferredWeights {
 public:
  // Reorders stored -> preferred before the primitive (inputs), or preferred -> stored after it
  // (the filter gradient). `primitive_scratchpad`: bytes of scratch the kernel uses before the
  // slot (the primitive's scratchpad, and whatever else it keeps there).
  PreferredWeights(const dnnl::memory::desc& stored, const dnnl::memory::desc& preferred,
                   bool into_preferred, size_t primitive_scratchpad);

  size_t WorkspaceBytes() const { return slot_offset_ + slot_bytes_; }
  // Where the primitive finds the weights: the graph's tensor, or the slot.
  void* Buffer(void* stored, void* workspace) const {
    return active_ ? static_cast<char*>(workspace) + slot_offset_ : stored;
  }
  // Run before the primitive when reordering into the preferred layout, after it otherwise.
  absl::Status Reorder(void* stored, void* workspace);

 private:
  DnnlStep reorder_;
  bool into_preferred_;
  bool active_ = false;
  size_t slot_offset_;
  size_t slot_bytes_ = 0;
};

}  // namespace lockstep::dnnl_util
