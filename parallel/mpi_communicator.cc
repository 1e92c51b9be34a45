#include "parallel/mpi_communicator.h"

#include <algorithm>
#include <iterator>

#include "core/half.h"
#include "parallel/collective_util.h"
#include "parallel/reduce_math.h"

namespace lockstep::parallel {
namespace {

MPI_Datatype MpiType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kF64:
      return MPI_DOUBLE;
    case DType::kF16:
    case DType::kBF16:
      // Moved as 16-bit words: MPI has no arithmetic for them, so they are reduced with the
      // communicator's own operations (HalfOps).
      return MPI_UINT16_T;
    case DType::kI32:
      return MPI_INT32_T;
    case DType::kI64:
      return MPI_INT64_T;
    case DType::kU8:
    case DType::kBool:  // moved only, never reduced
      return MPI_UINT8_T;
  }
  LS_CHECK(false) << "unhandled dtype " << static_cast<int>(dtype);
  return MPI_DATATYPE_NULL;
}

// kAvg is a sum followed by a division on every rank.
MPI_Op BuiltinOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  LS_CHECK(false) << "unhandled reduce op " << static_cast<int>(op);
  return MPI_OP_NULL;
}

char* ElementAt(const Tensor& tensor, int64_t index) {
  return static_cast<char*>(tensor.raw_data()) + index * SizeOf(tensor.dtype());
}

// Calls `run(offset, count)` over [0, total) in pieces of at most `max_count` elements.
template <typename Run>
absl::Status ForEachChunk(int64_t total, int64_t max_count, Run run) {
  for (int64_t offset = 0; offset < total; offset += max_count) {
    LS_RETURN_IF_ERROR(run(offset, static_cast<int>(std::min(max_count, total - offset))));
  }
  return absl::OkStatus();
}

// An MPI_User_function over 16-bit floats (reduce_math.h).
template <typename Half, typename Combine>
void CombineHalves(void* in, void* inout, int* count, MPI_Datatype* /*type*/) {
  CombineElements<Half, Combine>(static_cast<const Half*>(in), static_cast<const Half*>(inout),
                                 static_cast<Half*>(inout), static_cast<size_t>(*count));
}

// HalfOps' order: bf16 then f16, each sum (and avg), max, min.
constexpr MPI_User_function* kHalfFunctions[] = {
    CombineHalves<BFloat16, SumOf>, CombineHalves<BFloat16, MaxOf>, CombineHalves<BFloat16, MinOf>,
    CombineHalves<Float16, SumOf>,  CombineHalves<Float16, MaxOf>,  CombineHalves<Float16, MinOf>};
static_assert(std::size(kHalfFunctions) == std::tuple_size_v<MpiCommunicator::HalfOps>);

size_t HalfOpIndex(ReduceOp op, DType dtype) {
  const size_t first = dtype == DType::kBF16 ? 0 : 3;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return first;
    case ReduceOp::kMax:
      return first + 1;
    case ReduceOp::kMin:
      return first + 2;
  }
  LS_CHECK(false) << "unhandled reduce op " << static_cast<int>(op);
  return first;
}

}  // namespace

absl::Status MpiErrorStatus(int error, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  std::string message = MPI_Error_string(error, text, &length) == MPI_SUCCESS
                            ? std::string(text, length)
                            : absl::StrCat("MPI error ", error);
  return absl::InternalError(
      absl::StrCat("MPI call ", call, " failed at ", file, ":", line, ": ", message));
}

// The delete function of an attribute on MPI_COMM_SELF, which MPI_Finalize frees first: a
// communicator still alive then (a comm group's or a test's, held past the Context's end) frees
// its duplicate and operations there, which Open MPI would otherwise leak (LeakSanitizer). The
// key goes with it (MPI releases it once the attribute is gone).
int MpiCommunicator::FreeHandles(MPI_Comm /*self*/, int keyval, void* communicator,
                                 void* /*extra*/) {
  MPI_Comm_free_keyval(&keyval);
  auto* self = static_cast<MpiCommunicator*>(communicator);
  for (MPI_Op& op : self->half_ops_) {
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
  }
  return MPI_Comm_free(&self->comm_);
}

absl::StatusOr<std::shared_ptr<MpiCommunicator>> MpiCommunicator::Create(MPI_Comm comm,
                                                                         int64_t max_count,
                                                                         size_t segment_bytes) {
  LS_CHECK(max_count > 0 && max_count <= kMaxCount) << "max_count " << max_count;
  MPI_Comm dup;
  MPI_RETURN_IF_ERROR(MPI_Comm_dup(comm, &dup));
  std::shared_ptr<MpiCommunicator> result(new MpiCommunicator(dup, 0, 1, max_count));
  MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
  MPI_RETURN_IF_ERROR(MPI_Comm_rank(dup, &result->rank_));
  MPI_RETURN_IF_ERROR(MPI_Comm_size(dup, &result->size_));
  // Rank 0's choice: every rank must cut an AllReduce into the same calls, and mpirun does not
  // forward the environment (LOCKSTEP_ALLREDUCE_SEGMENT_MB) to other hosts unless told to (-x).
  unsigned long long rank0_segment_bytes = segment_bytes;
  MPI_RETURN_IF_ERROR(MPI_Bcast(&rank0_segment_bytes, 1, MPI_UNSIGNED_LONG_LONG, 0, dup));
  result->segment_bytes_ = static_cast<size_t>(rank0_segment_bytes);
  MPI_RETURN_IF_ERROR(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, FreeHandles,
                                             &result->finalize_keyval_, nullptr));
  MPI_RETURN_IF_ERROR(MPI_Comm_set_attr(MPI_COMM_SELF, result->finalize_keyval_, result.get()));
  for (size_t i = 0; i < result->half_ops_.size(); ++i) {
    MPI_RETURN_IF_ERROR(MPI_Op_create(kHalfFunctions[i], /*commute=*/1, &result->half_ops_[i]));
  }
  return result;
}

MPI_Op MpiCommunicator::OpFor(ReduceOp op, DType dtype) const {
  if (IsLowPrecision(dtype)) return half_ops_[HalfOpIndex(op, dtype)];
  return BuiltinOp(op);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // MPI_Finalize ran FreeHandles
  if (finalize_keyval_ != MPI_KEYVAL_INVALID) {
    MPI_Comm_delete_attr(MPI_COMM_SELF, finalize_keyval_);  // runs FreeHandles now
  }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);  // Create failed before the attribute
}

absl::Status MpiCommunicator::AllReduce(const Tensor& inout, ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckAllReduce(*this, inout, op));
  const int64_t segment =
      segment_bytes_ == 0
          ? max_count_
          : std::clamp<int64_t>(segment_bytes_ / SizeOf(inout.dtype()), 1, max_count_);
  absl::Status status =
      ForEachChunk(inout.numel(), segment, [&](int64_t offset, int count) -> absl::Status {
        MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, ElementAt(inout, offset), count,
                                          MpiType(inout.dtype()), OpFor(op, inout.dtype()), comm_));
        return absl::OkStatus();
      });
  LS_RETURN_IF_ERROR(Annotate(status, DescribeCollective(*this, "AllReduce", inout.nbytes())));
  if (op == ReduceOp::kAvg) DivideBySize(inout, size_);
  return absl::OkStatus();
}

absl::Status MpiCommunicator::AllGather(const Tensor& input, const Tensor& output) {
  LS_RETURN_IF_ERROR(CheckAllGather(*this, input, output));
  return Annotate(input.numel() > max_count_ ? AllGatherByBroadcast(input, output)
                                             : AllGatherOnce(input, output),
                  DescribeCollective(*this, "AllGather", output.nbytes()));
}

absl::Status MpiCommunicator::AllGatherOnce(const Tensor& input, const Tensor& output) {
  int count = static_cast<int>(input.numel());
  MPI_Datatype type = MpiType(input.dtype());
  // MPI forbids overlapping send and receive buffers; a gather in place must say so.
  const void* send = input.raw_data() == ElementAt(output, int64_t{rank_} * count)
                         ? MPI_IN_PLACE
                         : input.raw_data();
  MPI_RETURN_IF_ERROR(MPI_Allgather(send, count, type, output.raw_data(), count, type, comm_));
  return absl::OkStatus();
}

absl::Status MpiCommunicator::AllGatherByBroadcast(const Tensor& input, const Tensor& output) {
  int64_t count = input.numel();
  Tensor own_block = output.View(rank_ * input.nbytes(), input.shape(), input.dtype());
  LS_RETURN_IF_ERROR(CopyTensorBytes(own_block, input));
  for (int root = 0; root < size_; ++root) {
    LS_RETURN_IF_ERROR(
        BroadcastChunks(ElementAt(output, root * count), count, input.dtype(), root));
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::Broadcast(const Tensor& inout, int root) {
  LS_RETURN_IF_ERROR(CheckBroadcast(*this, inout, root));
  return Annotate(BroadcastChunks(ElementAt(inout, 0), inout.numel(), inout.dtype(), root),
                  DescribeCollective(*this, "Broadcast", inout.nbytes()));
}

absl::Status MpiCommunicator::BroadcastChunks(char* data, int64_t count, DType dtype, int root) {
  return ForEachChunk(count, max_count_, [&](int64_t offset, int chunk) -> absl::Status {
    MPI_RETURN_IF_ERROR(
        MPI_Bcast(data + offset * SizeOf(dtype), chunk, MpiType(dtype), root, comm_));
    return absl::OkStatus();
  });
}

absl::Status MpiCommunicator::ReduceScatter(const Tensor& input, const Tensor& output,
                                            ReduceOp op) {
  LS_RETURN_IF_ERROR(CheckReduceScatter(*this, input, output, op));
  LS_RETURN_IF_ERROR(Annotate(output.numel() > max_count_ ? ReduceScatterByReduce(input, output, op)
                                                          : ReduceScatterOnce(input, output, op),
                              DescribeCollective(*this, "ReduceScatter", input.nbytes())));
  if (op == ReduceOp::kAvg) DivideBySize(output, size_);
  return absl::OkStatus();
}

absl::Status MpiCommunicator::ReduceScatterOnce(const Tensor& input, const Tensor& output,
                                                ReduceOp op) {
  MPI_RETURN_IF_ERROR(MPI_Reduce_scatter_block(
      input.raw_data(), output.raw_data(), static_cast<int>(output.numel()), MpiType(input.dtype()),
      OpFor(op, input.dtype()), comm_));
  return absl::OkStatus();
}

absl::Status MpiCommunicator::ReduceScatterByReduce(const Tensor& input, const Tensor& output,
                                                    ReduceOp op) {
  int64_t count = output.numel();
  for (int root = 0; root < size_; ++root) {
    LS_RETURN_IF_ERROR(
        ForEachChunk(count, max_count_, [&](int64_t offset, int chunk) -> absl::Status {
          // Only the root's receive buffer is significant.
          void* receive = root == rank_ ? ElementAt(output, offset) : nullptr;
          MPI_RETURN_IF_ERROR(MPI_Reduce(ElementAt(input, root * count + offset), receive, chunk,
                                         MpiType(input.dtype()), OpFor(op, input.dtype()), root,
                                         comm_));
          return absl::OkStatus();
        }));
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::Barrier() {
  int error = MPI_Barrier(comm_);
  if (error == MPI_SUCCESS) return absl::OkStatus();
  return Annotate(MpiErrorStatus(error, "MPI_Barrier(comm_)", __FILE__, __LINE__),
                  DescribeCollective(*this, "Barrier", 0));
}

}  // namespace lockstep::parallel
