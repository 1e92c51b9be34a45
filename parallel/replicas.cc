#include "parallel/replicas.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <map>

#include "absl/strings/str_join.h"
#include "core/logging.h"

namespace lockstep::parallel {
namespace {

uint32_t Crc32(const std::vector<Tensor>& buffers) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const Tensor& buffer : buffers) {
    const auto* bytes = static_cast<const Bytef*>(buffer.raw_data());
    for (size_t done = 0; done < buffer.nbytes();) {
      const size_t chunk = std::min<size_t>(buffer.nbytes() - done, 1u << 30);
      crc = crc32(crc, bytes + done, static_cast<uInt>(chunk));
      done += chunk;
    }
  }
  return static_cast<uint32_t>(crc);
}

// "ranks 0, 2, 3 have X; rank 1 has Y" from each rank's value.
std::string WhoHasWhat(const int64_t* values, int size, const char* what) {
  std::map<int64_t, std::vector<int>> ranks_by_value;
  for (int rank = 0; rank < size; ++rank) ranks_by_value[values[rank]].push_back(rank);
  std::vector<std::string> parts;
  for (const auto& [value, ranks] : ranks_by_value) {
    parts.push_back(absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", absl::StrJoin(ranks, ", "),
                                 ranks.size() == 1 ? " has " : " have ", what, " ",
                                 absl::Hex(static_cast<uint64_t>(value), absl::kZeroPad16)));
  }
  return absl::StrJoin(parts, "; ");
}

bool AllEqual(const int64_t* values, int size) {
  for (int rank = 1; rank < size; ++rank) {
    if (values[rank] != values[0]) return false;
  }
  return true;
}

}  // namespace

absl::Status SynchronizeReplicas(Communicator& comm, const std::string& fingerprint,
                                 const std::vector<Tensor>& buffers) {
  const int size = comm.size();
  Tensor mine = Tensor::Empty({2}, DType::kI64);
  mine.data<int64_t>()[0] = static_cast<int64_t>(std::strtoull(fingerprint.c_str(), nullptr, 16));
  mine.data<int64_t>()[1] = Crc32(buffers);
  Tensor all = Tensor::Empty({size, 2}, DType::kI64);
  LS_RETURN_IF_ERROR(Annotate(comm.AllGather(mine, all), "start-up check of the replicas"));
  std::vector<int64_t> fingerprints(size), crcs(size);
  for (int rank = 0; rank < size; ++rank) {
    fingerprints[rank] = all.data<int64_t>()[2 * rank];
    crcs[rank] = all.data<int64_t>()[2 * rank + 1];
  }
  if (!AllEqual(fingerprints.data(), size)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ranks compiled different training graphs: ",
                     WhoHasWhat(fingerprints.data(), size, "graph fingerprint"),
                     ". Every rank must build the same model with the same options"));
  }
  if (AllEqual(crcs.data(), size)) return absl::OkStatus();
  LS_LOG(Warning) << "parameters differ across ranks (" << WhoHasWhat(crcs.data(), size, "CRC")
                  << "): broadcasting rank 0's";
  for (const Tensor& buffer : buffers) {
    LS_RETURN_IF_ERROR(Annotate(comm.Broadcast(buffer, 0), "broadcasting the parameters"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> AgreeOnMean(Communicator& comm, Tensor& values) {
  LS_CHECK(values.dtype() == DType::kF32 && values.device().type == DeviceType::kCPU);
  const int size = comm.size();
  const int64_t n = values.numel();
  Tensor all = Tensor::Empty({size, n}, DType::kF32);
  LS_RETURN_IF_ERROR(comm.AllGather(values.Reshape({n}), all));
  const float* rows = all.data<float>();
  bool same = true;
  for (int rank = 1; rank < size && same; ++rank) {
    same = std::memcmp(rows, rows + rank * n, n * sizeof(float)) == 0;
  }
  if (same) return false;
  float* mean = values.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0.0;
    for (int rank = 0; rank < size; ++rank) sum += rows[rank * n + i];
    mean[i] = static_cast<float>(sum / size);
  }
  return true;
}

}  // namespace lockstep::parallel
