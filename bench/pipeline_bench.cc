// lockstep-bench-pipeline: images/s of the input pipeline on ImageNet-like JPEGs (500x375, quality
// 95: about 4.5 bits per pixel, as ImageNet's photos).
//
//   full:   Decode + RandomResizedCrop(224) + RandomHorizontalFlip + Normalize + HWC2CHW, batches
//           of (32, 3, 224, 224) float32, as torchvision's ImageFolder + DataLoader with the same
//           transforms (../shared/peers/torch_pipeline.py, run on the same DIR/train).
//   decode: Decode alone, one image per batch: the ceiling of the full pipeline.
//
// Usage: lockstep-bench-pipeline DIR [--images 640] [--batches 40] [--workers 1,2] [--benchmark_*]
// The JPEGs are written to DIR/train/<class>/ first when DIR/train does not exist yet.

#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/logging.h"
#include "dataset/image_folder.h"
#include "dataset/sample_dataset.h"
#include "dataset/transforms.h"

namespace lockstep::dataset {
namespace {

struct BenchConfig {
  std::string dir;
  int images = 640;
  int batches = 40;
  int batch = 32;
  std::vector<int> workers = {1, 2};
};

absl::Status EnsureImages(const BenchConfig& config) {
  if (std::filesystem::exists(std::filesystem::path(config.dir) / "train")) {
    return absl::OkStatus();
  }
  std::cout << LogPrefix() << "writing " << config.images << " JPEGs of 500x375 to " << config.dir
            << "/train" << std::endl;
  int classes = static_cast<int>(SampleClassNames().size());
  return WriteSampleDataset(config.dir, {.train_per_class = config.images / classes,
                                         .val_per_class = 0,
                                         .height = 375,
                                         .width = 500,
                                         .quality = 95});
}

// Times `iterations` batches after one warm-up batch, as the torchvision peer does.
void RunPipeline(benchmark::State& state, const Dataset& dataset, int workers) {
  absl::StatusOr<std::unique_ptr<Iterator>> iterator = dataset.MakeIterator();
  Minibatch batch;
  absl::StatusOr<bool> got = iterator.ok() ? (*iterator)->Next(&batch) : iterator.status();
  for (auto _ : state) {
    if (!got.ok() || !*got) break;
    got = (*iterator)->Next(&batch);
  }
  if (!got.ok() || !*got) {
    state.SkipWithError(got.ok() ? "pipeline ended" : std::string(got.status().message()).c_str());
    return;
  }
  int64_t images = state.iterations() * batch.images.dim(0);
  state.SetItemsProcessed(images);
  state.counters["img/s/worker"] =
      benchmark::Counter(static_cast<double>(images) / workers, benchmark::Counter::kIsRate);
  state.counters["skipped"] = static_cast<double>((*iterator)->Stats().skipped_files);
}

absl::Status Register(const BenchConfig& config) {
  LS_ASSIGN_OR_RETURN(Dataset images, ImageFolder(config.dir + "/train", {.shuffle = true}));
  Dataset full = images
                     .Map({Decode(), RandomResizedCrop(224), RandomHorizontalFlip(),
                           Normalize({0.485f * 255, 0.456f * 255, 0.406f * 255},
                                     {0.229f * 255, 0.224f * 255, 0.225f * 255}),
                           HWC2CHW()})
                     .Batch(config.batch, /*drop_remainder=*/true)
                     .Repeat();
  Dataset decode = images.Map({Decode()}).Batch(1).Repeat();
  for (int workers : config.workers) {
    benchmark::RegisterBenchmark(absl::StrCat("pipeline/full/workers:", workers).c_str(),
                                 [full, workers](benchmark::State& state) {
                                   RunPipeline(state, full.Workers(workers), workers);
                                 })
        ->Iterations(config.batches)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(absl::StrCat("pipeline/decode/workers:", workers).c_str(),
                                 [decode, workers](benchmark::State& state) {
                                   RunPipeline(state, decode.Workers(workers), workers);
                                 })
        ->Iterations(static_cast<int64_t>(config.batches) * config.batch)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace lockstep::dataset

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // takes the --benchmark_* flags out of argv
  lockstep::dataset::BenchConfig config;
  CLI::App app{"Input pipeline images/s on ImageNet-sized JPEGs (full pipeline and decode only)."};
  app.add_option("dir", config.dir, "image directory (DIR/train is the ImageFolder root)")
      ->required();
  app.add_option("--images", config.images, "JPEGs to write when DIR/train is missing")
      ->capture_default_str();
  app.add_option("--batches", config.batches, "timed batches of the full pipeline")
      ->capture_default_str();
  app.add_option("--batch", config.batch, "batch size")->capture_default_str();
  app.add_option("--workers", config.workers, "worker thread counts")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  absl::Status status = lockstep::dataset::EnsureImages(config);
  if (status.ok()) status = lockstep::dataset::Register(config);
  if (!status.ok()) {
    std::cerr << lockstep::LogPrefix() << "error: " << status.message() << std::endl;
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
