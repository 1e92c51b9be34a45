#include "train/summary/summary_writer.h"

#include <google/protobuf/util/json_util.h>

#include <charconv>
#include <chrono>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "core/host_name.h"
#include "train/summary/event.pb.h"
#include "train/summary/tfrecord.h"

namespace lockstep::train::summary {
namespace {

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The shortest text that reads back as the same double; JSON has no NaN or infinity, so those
// are strings, as in protobuf's JSON mapping (ReadMetrics parses them back).
std::string JsonNumber(double value) {
  if (std::isnan(value)) return "\"NaN\"";
  if (std::isinf(value)) return value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  char text[32];
  const std::to_chars_result end = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, end.ptr);
}

bool IsPlainTag(absl::string_view tag) {
  if (tag.empty()) return false;
  for (char c : tag) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '-' && c != '.' && c != '/') return false;
  }
  return true;
}

std::string EventRecord(const proto::Event& event) {
  return EncodeTfRecord(event.SerializeAsString());
}

}  // namespace

absl::StatusOr<std::unique_ptr<SummaryWriter>> SummaryWriter::Open(const std::string& directory) {
  LS_RETURN_IF_ERROR(Annotate(MakeDirectories(directory), "summary directory"));
  LS_ASSIGN_OR_RETURN(AppendOnlyFile metrics,
                      AppendOnlyFile::Open(JoinPath(directory, kMetricsFileName)));
  const double now = WallTime();
  LS_ASSIGN_OR_RETURN(AppendOnlyFile events,
                      AppendOnlyFile::Open(JoinPath(
                          directory, absl::StrCat("events.out.tfevents.", static_cast<int64_t>(now),
                                                  ".", HostName()))));
  proto::Event version;
  version.set_wall_time(now);
  version.set_file_version("brain.Event:2");
  LS_RETURN_IF_ERROR(events.Append(EventRecord(version)));
  return std::unique_ptr<SummaryWriter>(
      new SummaryWriter(directory, std::move(metrics), std::move(events)));
}

absl::Status SummaryWriter::AddScalar(absl::string_view tag, int64_t epoch, int64_t step,
                                      double value) {
  if (!IsPlainTag(tag)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "summary tag '", tag, "': use letters, digits and _-./ only (", metrics_path(), ")"));
  }
  const double now = WallTime();
  LS_RETURN_IF_ERROR(metrics_.Append(
      absl::StrCat("{\"wall_time\":", JsonNumber(now), ",\"epoch\":", epoch, ",\"step\":", step,
                   ",\"tag\":\"", tag, "\",\"value\":", JsonNumber(value), "}\n")));
  proto::Event event;
  event.set_wall_time(now);
  event.set_step(step);
  proto::Summary::Value* scalar = event.mutable_summary()->add_value();
  scalar->set_tag(std::string(tag));
  scalar->set_simple_value(static_cast<float>(value));
  return events_.Append(EventRecord(event));
}

absl::StatusOr<std::vector<proto::MetricRecord>> ReadMetrics(const std::string& path) {
  LS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  std::vector<proto::MetricRecord> records;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    proto::MetricRecord record;
    auto status = google::protobuf::util::JsonStringToMessage(std::string(line), &record);
    if (!status.ok()) {
      return absl::DataLossError(
          absl::StrCat(path, ":", line_number, ": not a metrics record: ", status.ToString()));
    }
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace lockstep::train::summary
