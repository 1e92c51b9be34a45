#pragma once

// The start-up check of a data-parallel job. Before the first step every rank must run the
// same graph (else the collectives of the step would not match and the job would hang) and hold
// the same parameters (else the replicas would drift apart).

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "parallel/communicator.h"

namespace lockstep::parallel {

// Allgathers the graph fingerprint and a CRC-32 of `buffers` (the flat parameter and state
// buffers). Different fingerprints fail on every rank with a message that names which ranks
// have which. Different CRCs are repaired by broadcasting rank 0's buffers, with a warning that
// names the ranks that differed (PyTorch DDP and Horovod broadcast at start too).
absl::Status SynchronizeReplicas(Communicator& comm, const std::string& fingerprint,
                                 const std::vector<Tensor>& buffers);

}  // namespace lockstep::parallel
