// The metrics of --summary-dir: metrics.jsonl and the TensorBoard event file hold the same
// records (the event file read record by record with both CRCs checked, each Event parsed with
// the in-tree schema), a damaged record is caught, a real training run writes what it should,
// and gnuplot draws curves.png.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "core/file_io.h"
#include "dataset/decode.h"
#include "tests/testing/temp_dir.h"
#include "tests/train/shapes_data.h"
#include "tests/train/tfrecord_reader.h"
#include "train/model.h"
#include "train/models.h"
#include "train/summary/curves_plot.h"
#include "train/summary/event.pb.h"
#include "train/summary/summary_callback.h"
#include "train/summary/summary_writer.h"
#include "train/summary/tfrecord.h"

namespace lockstep::train {
namespace {

using summary::proto::Event;
using summary::proto::MetricRecord;

std::vector<MetricRecord> Metrics(const summary::SummaryWriter& writer) {
  absl::StatusOr<std::vector<MetricRecord>> records = summary::ReadMetrics(writer.metrics_path());
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<MetricRecord>{};
}

std::vector<Event> Events(const std::string& path) {
  absl::StatusOr<std::vector<std::string>> records = testing::ReadTfRecords(path);
  EXPECT_TRUE(records.ok()) << records.status();
  std::vector<Event> events;
  for (const std::string& record : records.value_or(std::vector<std::string>{})) {
    EXPECT_TRUE(events.emplace_back().ParseFromString(record));
  }
  return events;
}

// The event file starts with its version and then holds one scalar Event per JSON line.
void ExpectEventsMatchMetrics(const summary::SummaryWriter& writer) {
  const std::vector<MetricRecord> metrics = Metrics(writer);
  const std::vector<Event> events = Events(writer.events_path());
  ASSERT_EQ(events.size(), metrics.size() + 1);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.6e9);
  for (size_t i = 0; i < metrics.size(); ++i) {
    const Event& event = events[i + 1];
    SCOPED_TRACE(metrics[i].DebugString());
    ASSERT_TRUE(event.has_summary());
    ASSERT_EQ(event.summary().value_size(), 1);
    EXPECT_EQ(event.step(), metrics[i].step());
    EXPECT_EQ(event.wall_time(), metrics[i].wall_time());
    EXPECT_EQ(event.summary().value(0).tag(), metrics[i].tag());
    EXPECT_EQ(event.summary().value(0).simple_value(), static_cast<float>(metrics[i].value()));
  }
}

TEST(Crc32cTest, MatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(summary::Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(summary::Crc32c(""), 0u);
  const uint32_t crc = 0xE3069283u;
  EXPECT_EQ(summary::MaskedCrc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(SummaryWriterTest, EventFileHoldsTheRecordsOfTheJsonLines) {
  lockstep::testing::TempDir dir;
  absl::StatusOr<std::unique_ptr<summary::SummaryWriter>> writer =
      summary::SummaryWriter::Open(dir.Join("runs/a"));  // made with its parent
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int64_t step = 1; step <= 6; ++step) {
    const int64_t epoch = (step + 2) / 3;
    ASSERT_TRUE((*writer)->AddScalar("train/loss", epoch, step, 2.5 / step).ok());
    ASSERT_TRUE((*writer)->AddScalar("train/lr", epoch, step, 0.1 * step).ok());
    if (step % 3 == 0) {
      ASSERT_TRUE((*writer)->AddScalar("val/accuracy", epoch, step, 0.3).ok());
    }
  }
  const std::vector<MetricRecord> metrics = Metrics(**writer);
  ASSERT_EQ(metrics.size(), 14u);
  EXPECT_EQ(metrics[0].tag(), "train/loss");
  EXPECT_EQ(metrics[0].value(), 2.5);  // doubles read back exactly
  EXPECT_EQ(metrics[2].step(), 2);
  EXPECT_EQ(metrics[2].value(), 2.5 / 2);
  EXPECT_EQ(metrics[6].tag(), "val/accuracy");
  EXPECT_EQ(metrics[6].epoch(), 1);
  EXPECT_EQ(metrics[13].epoch(), 2);
  ExpectEventsMatchMetrics(**writer);
  EXPECT_TRUE(absl::StartsWith((*writer)->events_path(), dir.Join("runs/a/events.out.tfevents.")));
}

TEST(SummaryWriterTest, JsonLinesAreNumbersAndNonFiniteValuesRoundTrip) {
  lockstep::testing::TempDir dir;
  auto writer = summary::SummaryWriter::Open(dir.path());
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->AddScalar("train/loss", 1, 7, 0.1).ok());
  ASSERT_TRUE((*writer)->AddScalar("train/loss", 1, 8, std::nan("")).ok());
  absl::StatusOr<std::string> text = ReadWholeFile((*writer)->metrics_path());
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("\"epoch\":1,\"step\":7,\"tag\":\"train/loss\",\"value\":0.1}\n"),
            std::string::npos)
      << *text;
  const std::vector<MetricRecord> metrics = Metrics(**writer);
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_TRUE(std::isnan(metrics[1].value()));
  EXPECT_EQ((*writer)->AddScalar("train loss", 1, 9, 1.0).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SummaryWriterTest, DamagedRecordsAreCaught) {
  lockstep::testing::TempDir dir;
  auto writer = summary::SummaryWriter::Open(dir.path());
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->AddScalar("train/loss", 1, 1, 1.5).ok());
  const std::string path = (*writer)->events_path();
  absl::StatusOr<std::string> intact = ReadWholeFile(path);
  ASSERT_TRUE(intact.ok());
  absl::StatusOr<std::vector<std::string>> records = testing::ReadTfRecords(path);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2u);
  const size_t second = 12 + (*records)[0].size() + 4;  // where the scalar's record starts

  const auto damaged = [&](size_t byte) {
    std::string bytes = *intact;
    bytes[byte] ^= 0x01;
    EXPECT_TRUE(WriteFileAtomically(path, bytes).ok());
    return testing::ReadTfRecords(path).status();
  };
  absl::Status data = damaged(second + 12 + 3);
  EXPECT_EQ(data.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(data.message(), "data CRC mismatch")) << data;
  EXPECT_TRUE(absl::StrContains(data.message(), absl::StrCat(path, ": record at byte ", second)))
      << data;
  absl::Status length = damaged(second);
  EXPECT_TRUE(absl::StrContains(length.message(), "length CRC mismatch")) << length;
  ASSERT_TRUE(WriteFileAtomically(path, intact->substr(0, intact->size() - 1)).ok());
  EXPECT_TRUE(absl::StrContains(testing::ReadTfRecords(path).status().message(), "truncated"));
}

TEST(SummaryWriterTest, AnUnusableDirectoryIsNamed) {
  lockstep::testing::TempDir dir;
  ASSERT_TRUE(WriteFileAtomically(dir.Join("file"), "x").ok());
  absl::StatusOr<std::unique_ptr<summary::SummaryWriter>> writer =
      summary::SummaryWriter::Open(dir.Join("file/summary"));
  ASSERT_FALSE(writer.ok());
  EXPECT_TRUE(absl::StrContains(writer.status().message(), dir.Join("file/summary")))
      << writer.status();
}

// Steps a test saw, and what EpochReport does in lockstep-train: evaluates after each epoch and
// hands the result to the summary.
class EvalAndRecord : public Callback {
 public:
  EvalAndRecord(DataSource* val, std::shared_ptr<SummaryCallback> summary)
      : val_(val), summary_(std::move(summary)) {}
  absl::Status OnStepEnd(Model&, const StepInfo& step) override {
    steps.push_back(step);
    return absl::OkStatus();
  }
  absl::Status OnEpochEnd(Model& model, const EpochInfo& epoch) override {
    LS_ASSIGN_OR_RETURN(EvalResult eval, model.Eval(*val_));
    evals.push_back(eval);
    return summary_->AddEval(epoch.epoch, model.global_step(), eval);
  }

  std::vector<StepInfo> steps;
  std::vector<EvalResult> evals;

 private:
  DataSource* val_;
  std::shared_ptr<SummaryCallback> summary_;
};

TEST(SummaryCallbackTest, TrainingWritesLossRateSpeedAndValidation) {
  constexpr int64_t kBatch = 16, kImages = 128, kEvery = 3, kWorld = 2;
  train::testing::ShapeImages train_images = train::testing::MakeShapeImages(kImages, 1, 32, 1);
  train::testing::ShapeImages val_images = train::testing::MakeShapeImages(64, 1, 32, 2);
  auto train_data = InMemoryDataSource::Create(train_images.images, train_images.labels,
                                               {.batch_size = kBatch, .drop_remainder = true});
  auto val_data =
      InMemoryDataSource::Create(val_images.images, val_images.labels, {.batch_size = 32});
  ASSERT_TRUE(train_data.ok() && val_data.ok());
  lockstep::testing::TempDir dir;
  absl::StatusOr<std::shared_ptr<SummaryCallback>> summary = SummaryCallback::Create(
      {.directory = dir.Join("summary"), .every_steps = kEvery, .world_size = kWorld});
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto seen = std::make_shared<EvalAndRecord>(val_data->get(), *summary);
  Model model(models::LeNet5(train::testing::kShapeClasses, 1), SoftmaxCrossEntropy(),
              Momentum{.lr = 0.05, .momentum = 0.9},
              {.batch_size = kBatch, .image_shape = {1, 32, 32}});
  ASSERT_TRUE(model.Train(2, **train_data, {*summary, seen}).ok());

  // Steps 3 and 6 of each 8-step epoch; the mean loss and the speed over the steps since the
  // last record (the tail of epoch 1 counts towards the first record of epoch 2).
  std::vector<MetricRecord> expected;
  const auto expect = [&](int64_t epoch, int64_t step, const char* tag, double value) {
    MetricRecord& record = expected.emplace_back();
    record.set_epoch(epoch);
    record.set_step(step);
    record.set_tag(tag);
    record.set_value(value);
  };
  double loss_sum = 0.0, seconds = 0.0;
  int64_t steps = 0;
  for (const StepInfo& step : seen->steps) {
    loss_sum += step.loss;
    seconds += step.seconds;
    ++steps;
    if (step.step % kEvery != 0) continue;
    expect(step.epoch, step.global_step, "train/loss", loss_sum / steps);
    expect(step.epoch, step.global_step, "train/lr", 0.05);
    expect(step.epoch, step.global_step, "train/images_per_sec",
           static_cast<double>(steps * kBatch * kWorld) / seconds);
    loss_sum = seconds = 0.0;
    steps = 0;
    if (step.step == 6) {  // the epoch's validation follows its last step, 8
      const EvalResult& eval = seen->evals[step.epoch - 1];
      expect(step.epoch, step.epoch * 8, "val/accuracy", eval.accuracy);
      expect(step.epoch, step.epoch * 8, "val/loss", eval.loss);
    }
  }
  const std::vector<MetricRecord> metrics = Metrics((*summary)->writer());
  ASSERT_EQ(metrics.size(), expected.size());
  for (size_t i = 0; i < metrics.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(metrics[i].tag(), expected[i].tag());
    EXPECT_EQ(metrics[i].epoch(), expected[i].epoch());
    EXPECT_EQ(metrics[i].step(), expected[i].step());
    EXPECT_DOUBLE_EQ(metrics[i].value(), expected[i].value());
  }
  ExpectEventsMatchMetrics((*summary)->writer());
}

TEST(CurvesPlotTest, GnuplotDrawsAPngWithTheLatestValueOfEachStep) {
  lockstep::testing::TempDir dir;
  auto writer = summary::SummaryWriter::Open(dir.path());
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int64_t step = 10; step <= 40; step += 10) {
    ASSERT_TRUE((*writer)->AddScalar("train/loss", 1, step, 3.0 - step / 20.0).ok());
  }
  // A run resumed at step 20 records steps 30 and 40 again.
  ASSERT_TRUE((*writer)->AddScalar("train/loss", 2, 30, 0.75).ok());
  ASSERT_TRUE((*writer)->AddScalar("train/loss", 2, 40, 0.5).ok());
  ASSERT_TRUE((*writer)->AddScalar("val/accuracy", 2, 40, 0.875).ok());
  ASSERT_TRUE((*writer)->AddScalar("val/loss", 2, 40, 0.625).ok());

  absl::StatusOr<summary::PlotOutcome> outcome = summary::PlotCurves(dir.path());
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  absl::StatusOr<std::string> script = ReadWholeFile(dir.Join(summary::kCurvesScriptName));
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_TRUE(absl::StrContains(*script, "$train_loss << EOD\n10 2.5\n20 2\n30 0.75\n40 0.5\nEOD"))
      << *script;
  EXPECT_TRUE(absl::StrContains(*script, "$val_accuracy << EOD\n40 87.5\nEOD")) << *script;
  if (*outcome == summary::PlotOutcome::kNoGnuplot) {
    GTEST_SKIP() << "gnuplot is not installed (Debian: gnuplot-nox): curves.png not checked";
  }
  ASSERT_EQ(*outcome, summary::PlotOutcome::kDrawn);
  absl::StatusOr<std::string> png = ReadWholeFile(dir.Join(summary::kCurvesFileName));
  ASSERT_TRUE(png.ok()) << png.status();
  // A PNG that libpng decodes, of the size asked for, with something drawn on it.
  absl::StatusOr<Tensor> image = dataset::DecodeImage(
      absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(png->data()), png->size()));
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->shape(), (Shape{summary::kCurvesHeight, summary::kCurvesWidth, 3}));
  const uint8_t* pixels = image->data<uint8_t>();
  EXPECT_NE(std::count(pixels, pixels + image->numel(), 255), image->numel()) << "blank";
}

TEST(CurvesPlotTest, NothingToDrawBeforeTheFirstRecord) {
  lockstep::testing::TempDir dir;
  auto writer = summary::SummaryWriter::Open(dir.path());
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::StatusOr<summary::PlotOutcome> outcome = summary::PlotCurves(dir.path());
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, summary::PlotOutcome::kNoData);
}

}  // namespace
}  // namespace lockstep::train
