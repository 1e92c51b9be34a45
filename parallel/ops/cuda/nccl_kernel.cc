#include "parallel/ops/cuda/nccl_kernel.h"

#include "ops/cuda/cuda_status.h"
#include "parallel/comm_group.h"

namespace lockstep::parallel {

absl::StatusOr<NcclKernelParts> NcclPartsFor(const Node& node, const KernelContext& ctx) {
  LS_ASSIGN_OR_RETURN(CommGroup * group, GroupFor(node, ctx));
  auto* nccl = dynamic_cast<NcclCommunicator*>(group->communicator.get());
  if (nccl == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(node.Describe(), " on CUDA needs an NCCL communicator, group '",
                     node.attrs.GetString("group"), "' has ", group->communicator->backend()));
  }
  cudaEvent_t done = nullptr;
  CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  return NcclKernelParts{nccl, done};
}

}  // namespace lockstep::parallel
