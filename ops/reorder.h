#pragma once

// Reorder: the op every backend with layouts of its own names as its reorder op
// (Backend::reorder_op); its attribute "layout" names the target layout.

#include <vector>

#include "graph/kernel.h"

namespace lockstep {

// The layouts of a Reorder node, for every backend's Reorder kernel: its producer's layout in,
// the attribute's layout out.
LayoutChoice ReorderLayouts(const Node& node, const std::vector<Layout>& producer_layouts,
                            const SharedLayouts& shared);

}  // namespace lockstep
