#pragma once

// What every Communicator shares: argument checks, the context added to errors, and a byte copy
// between tensors on any device.
//
// The checks look only at dtypes, byte sizes, devices and the root, which agree across ranks when
// the ranks run the same program, so every rank rejects a bad call the same way before anything
// is sent: a wrong call is an error on every rank, never a hang.

#include <cstddef>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "parallel/communicator.h"

namespace lockstep::parallel {

absl::Status CheckAllReduce(const Communicator& comm, const Tensor& inout, ReduceOp op);
absl::Status CheckAllGather(const Communicator& comm, const Tensor& input, const Tensor& output);
absl::Status CheckBroadcast(const Communicator& comm, const Tensor& inout, int root);
absl::Status CheckReduceScatter(const Communicator& comm, const Tensor& input, const Tensor& output,
                                ReduceOp op);

// "AllReduce of 4096 bytes on rank 1 of 4 (mpi)": the context put in front of a failed call.
std::string DescribeCollective(const Communicator& comm, absl::string_view collective,
                               size_t bytes);

// Copies src's bytes into dst (dst.nbytes() == src.nbytes()), host or device on either side,
// through the device's backend (core/device_memory.h).
absl::Status CopyTensorBytes(const Tensor& dst, const Tensor& src);

}  // namespace lockstep::parallel
