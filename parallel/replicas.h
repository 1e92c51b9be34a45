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

// Collective over `comm`: makes `values` (this rank's copy of float32 state the ranks update
// apart, such as batch-norm running statistics, on the host) equal on every rank, as their mean
// over the ranks. The ranks gather every copy and each sums them in rank order, in double, so
// that every rank computes the same bits whatever order the transport would reduce in. True
// when `values` changed; false, with `values` untouched, when every rank held the same bits
// already (SyncBatchNorm, or no update since the last agreement), so agreeing twice changes
// nothing.
absl::StatusOr<bool> AgreeOnMean(Communicator& comm, Tensor& values);

}  // namespace lockstep::parallel
