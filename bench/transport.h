#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "parallel/comm_group.h"
#include "parallel/context.h"

namespace lockstep::bench {

// One line saying how the ranks of `group` (the world's host group) talk: hosts and ranks per
// host (by host name), then the communicator's paths. Under MPI, Open MPI's btl and pml
// selections (its MPI_T control variables, as --mca or OMPI_MCA_* set them) and the paths that
// follow from them, e.g.
//   transport: hosts=2 ranks_per_host=2,2 btl=^uct,openib,ofi pml=^ucx within_host=vader
//   between_hosts=tcp
// Without MPI (lockstep-run, torchrun), gloo's TCP transport, within a host too, e.g.
//   transport: hosts=2 ranks_per_host=1,1 backend=gloo within_host=tcp between_hosts=tcp
// Collective over the group; every rank gets the line.
absl::StatusOr<std::string> DescribeTransport(const parallel::Context& context,
                                              parallel::CommGroup& group);

}  // namespace lockstep::bench
