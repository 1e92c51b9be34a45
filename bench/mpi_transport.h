#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace lockstep::bench {

// One line saying how the ranks of MPI_COMM_WORLD talk: hosts and ranks per host (by processor
// name), Open MPI's btl and pml selections (its MPI_T control variables, as --mca or OMPI_MCA_*
// set them) and the paths that follow from them, e.g.
//   transport: hosts=2 ranks_per_host=2,2 btl=^uct,openib,ofi pml=^ucx within_host=vader
//   between_hosts=tcp
// Collective over MPI_COMM_WORLD; every rank gets the line.
absl::StatusOr<std::string> DescribeMpiTransport();

}  // namespace lockstep::bench
