#pragma once

// Which layouts the ranks keep values they must hold alike in: parameters, their gradients (what
// the AllReduce sums byte for byte) and optimizer state. Each rank's backend offers the layouts
// it can run for them (Backend::SharedLayoutOffer: an AVX-512 CPU offers OIhw16i16o and
// OIhw8i8o, an AVX2 CPU only OIhw8i8o); the job takes rank 0's offer less what any rank lacks,
// in rank 0's order, so every rank picks alike. Activations stay each rank's own choice.

#include <vector>

#include "core/device.h"
#include "core/layout.h"
#include "core/status.h"
#include "parallel/communicator.h"

namespace lockstep::parallel {

// Collective over `host_world` (every rank calls it): the layouts for CompileOptions::
// shared_layouts of graphs on `device`.
absl::StatusOr<std::vector<Layout>> AgreeSharedLayouts(Communicator& host_world, Device device);

// The agreement itself, from every rank's offer (names, by rank): rank 0's, less the layouts
// some rank does not offer.
std::vector<std::string> CommonLayouts(const std::vector<std::vector<std::string>>& offers);

}  // namespace lockstep::parallel
