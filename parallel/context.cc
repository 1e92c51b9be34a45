#include "parallel/context.h"

#include <mpi.h>

#include <atomic>
#include <cstdlib>
#include <iostream>

#include "core/logging.h"
#include "parallel/agree.h"
#include "parallel/mpi_communicator.h"
#include "parallel/watchdog.h"
#ifdef LOCKSTEP_WITH_CUDA
#include "ops/cuda/cuda_status.h"
#include "parallel/nccl_communicator.h"
#endif

namespace lockstep::parallel {

// Fills a Context; the only code besides Init that touches its fields.
class ContextBuilder {
 public:
  // This process alone; MPI untouched.
  static Context WorldOfOne();
  // Under mpirun: starts MPI and builds the world communicators.
  static absl::Status StartMpi(int* argc, char*** argv, Context* context);
  // Drops the communicators, which must go before MPI_Finalize.
  static void Release(Context* context);

 private:
  static absl::Status StartDeviceWorld(Context* context);
};

namespace {

#ifdef LOCKSTEP_WITH_CUDA
constexpr bool kCudaBuild = true;
#else
constexpr bool kCudaBuild = false;
#endif

// mpirun (Open MPI), or a PMIx / PMI launcher such as srun, sets these in every rank.
bool LaunchedByMpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

std::atomic<Context*> g_context{nullptr};  // set by Init

// The context Init made. Destroyed at exit after everything constructed later (queues, user
// statics), it drops the communicators and then finalizes MPI.
class Runtime {
 public:
  Runtime(int* argc, char*** argv) {
    if (!LaunchedByMpirun()) {
      context_ = ContextBuilder::WorldOfOne();
      return;
    }
    mpi_started_ = true;
    absl::Status status = ContextBuilder::StartMpi(argc, argv, &context_);
    if (!status.ok()) Abort(Annotate(status, "starting the parallel context"));
  }
  ~Runtime() {
    g_context.store(nullptr);
    if (!mpi_started_) return;
    ContextBuilder::Release(&context_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  Context& context() { return context_; }

 private:
  Context context_;
  bool mpi_started_ = false;
};

}  // namespace

Context ContextBuilder::WorldOfOne() {
  Context context;
  context.host_world_ = MakeSelfCommunicator(Device::CPU());
#ifdef LOCKSTEP_WITH_CUDA
  // NCCL with one rank, so a world of one runs the same collective kernels as many ranks.
  if (CudaAvailable()) {
    absl::StatusOr<std::shared_ptr<NcclCommunicator>> nccl =
        NcclCommunicator::Create(*context.host_world_, 0);
    if (nccl.ok()) {
      context.device_ = Device::CUDA(0);
      context.device_world_ = *nccl;
    } else {
      LS_LOG(Warning) << "no NCCL world of one on cuda:0, computing on the CPU: "
                      << nccl.status().message();
    }
  }
#endif
  return context;
}

absl::Status ContextBuilder::StartMpi(int* argc, char*** argv, Context* context) {
  int provided = 0;
  MPI_RETURN_IF_ERROR(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  if (provided < MPI_THREAD_SERIALIZED) {
    return absl::FailedPreconditionError(
        absl::StrCat("the MPI library provides thread level ", provided,
                     ", below MPI_THREAD_SERIALIZED: collectives run on a thread of their own"));
  }
  MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  context->launched_by_mpi_ = true;
  MPI_RETURN_IF_ERROR(MPI_Comm_rank(MPI_COMM_WORLD, &context->rank_));
  MPI_RETURN_IF_ERROR(MPI_Comm_size(MPI_COMM_WORLD, &context->size_));
  SetLogRank(context->rank_);
  MPI_Comm local;
  MPI_RETURN_IF_ERROR(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, context->rank_,
                                          MPI_INFO_NULL, &local));
  MPI_RETURN_IF_ERROR(MPI_Comm_rank(local, &context->local_rank_));
  MPI_RETURN_IF_ERROR(MPI_Comm_size(local, &context->local_size_));
  MPI_RETURN_IF_ERROR(MPI_Comm_free(&local));
  LS_ASSIGN_OR_RETURN(context->host_world_, MpiCommunicator::Create(MPI_COMM_WORLD));
  LS_RETURN_IF_ERROR(StartWatchdog());
  return StartDeviceWorld(context);
}

absl::Status ContextBuilder::StartDeviceWorld([[maybe_unused]] Context* context) {
#ifdef LOCKSTEP_WITH_CUDA
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  // NCCL needs a GPU of its own on every rank: either all ranks get one or all use the CPU.
  Tensor has_gpu = Tensor::Empty({1}, DType::kI32);
  *has_gpu.data<int32_t>() = context->local_rank_ < gpus ? 1 : 0;
  LS_RETURN_IF_ERROR(context->host_world_->AllReduce(has_gpu, ReduceOp::kMin));
  if (*has_gpu.data<int32_t>() == 0) {
    if (gpus > 0 && context->rank_ == 0) {
      LS_LOG(Warning) << context->local_size_ << " local ranks but " << gpus
                      << " GPUs on this host: every rank runs on the CPU";
    }
    return absl::OkStatus();
  }
  context->device_ = Device::CUDA(context->local_rank_);
  CUDA_RETURN_IF_ERROR(cudaSetDevice(context->local_rank_));
  LS_ASSIGN_OR_RETURN(context->device_world_,
                      NcclCommunicator::Create(*context->host_world_, context->local_rank_));
#endif
  return absl::OkStatus();
}

void ContextBuilder::Release(Context* context) {
  StopWatchdog();
  context->device_world_.reset();
  context->host_world_.reset();
}

absl::StatusOr<std::shared_ptr<Communicator>> Context::World(Device device) const {
  if (device.type == DeviceType::kCPU) return host_world_;
  if (device_world_ != nullptr && device_world_->device() == device) return device_world_;
  const char* why = !kCudaBuild ? "this build has no CUDA support"
                    : device_world_ == nullptr
                        ? "no GPU for this rank (none found, or fewer than the local ranks)"
                        : "tensors must live on this rank's own GPU";
  return absl::FailedPreconditionError(absl::StrCat("no communicator for ", device.ToString(),
                                                    " on rank ", rank_, " (which computes on ",
                                                    device_.ToString(), "): ", why));
}

Context& Init(int* argc, char*** argv) {
  static Runtime runtime(argc, argv);
  g_context.store(&runtime.context());
  return runtime.context();
}

Context& CurrentContext() {
  if (Context* context = g_context.load()) return *context;
  static Context alone = ContextBuilder::WorldOfOne();
  return alone;
}

void Abort(const absl::Status& status) {
  if (IsAgreedError(status)) {
    // Every rank holds it and ends alike: rank 0 speaks for all, and MPI is finalized at exit
    // rather than aborted, so Open MPI adds no messages of its own.
    if (CurrentContext().rank() == 0)
      std::cerr << "lockstep: error: " << status.message() << std::endl;
    std::exit(1);
  }
  LS_LOG(Error) << status.message();
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

}  // namespace lockstep::parallel
