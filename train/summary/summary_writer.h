#pragma once

// Scalars a person can follow while training runs. Every AddScalar appends one line to
// DIR/metrics.jsonl,
//   {"wall_time":1718000000.25,"epoch":1,"step":20,"tag":"train/loss","value":2.3102}
// and one Event to DIR/events.out.tfevents.<unix seconds>.<host> (TensorBoard's format:
// `tensorboard --logdir DIR`), each written at once, so `tail -f` and TensorBoard see it live.
// Writing to a directory again (a resumed run) keeps its history: metrics.jsonl is appended to,
// and each run adds an event file, which TensorBoard reads together with the others.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "core/status.h"
#include "train/summary/metric_record.pb.h"

namespace lockstep::train::summary {

inline constexpr char kMetricsFileName[] = "metrics.jsonl";

class SummaryWriter {
 public:
  // Creates `directory` where missing; an error names the path that could not be made or
  // written.
  static absl::StatusOr<std::unique_ptr<SummaryWriter>> Open(const std::string& directory);

  // `tag`: letters, digits and "_-./", so that it is a JSON string and a TensorBoard tag as it
  // is. A non-finite value is written as the JSON string "NaN", "Infinity" or "-Infinity", as
  // protobuf's JSON mapping has it.
  absl::Status AddScalar(absl::string_view tag, int64_t epoch, int64_t step, double value);

  const std::string& directory() const { return directory_; }
  const std::string& metrics_path() const { return metrics_.path(); }
  const std::string& events_path() const { return events_.path(); }

 private:
  SummaryWriter(std::string directory, AppendOnlyFile metrics, AppendOnlyFile events)
      : directory_(std::move(directory)),
        metrics_(std::move(metrics)),
        events_(std::move(events)) {}

  std::string directory_;
  AppendOnlyFile metrics_;
  AppendOnlyFile events_;
};

// The records of a metrics.jsonl in file order; an error names the file and the line.
absl::StatusOr<std::vector<proto::MetricRecord>> ReadMetrics(const std::string& path);

}  // namespace lockstep::train::summary
