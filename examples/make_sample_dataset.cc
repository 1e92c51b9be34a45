// lockstep-make-sample: writes the built-in sample data set (dataset/sample_dataset.h), an
// ImageFolder of JPEGs with train/ and val/, to a directory.

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "core/logging.h"
#include "dataset/sample_dataset.h"
#include "examples/flag_checks.h"

namespace {

// JPEG's largest side.
constexpr int64_t kMaxSide = 65500;

}  // namespace

int main(int argc, char** argv) {
  lockstep::dataset::SampleDatasetOptions options;
  std::string out;
  CLI::App app{"Writes the built-in sample data set: OUT/train and OUT/val, ten classes of JPEGs."};
  app.add_option("out", out, "output directory")->required()->check(lockstep::NonEmptyPath());
  app.add_option("--seed", options.seed, "seed of every image")
      ->check(lockstep::UnsignedInteger())
      ->capture_default_str();
  app.add_option("--train-per-class", options.train_per_class, "training images per class")
      ->check(lockstep::IntegerIn(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--val-per-class", options.val_per_class,
                 "validation images per class (0: no val/)")
      ->check(lockstep::IntegerIn(0, 1'000'000))
      ->capture_default_str();
  app.add_option("--height", options.height, "image height")
      ->check(lockstep::IntegerIn(1, kMaxSide))
      ->capture_default_str();
  app.add_option("--width", options.width, "image width")
      ->check(lockstep::IntegerIn(1, kMaxSide))
      ->capture_default_str();
  app.add_option("--quality", options.quality, "JPEG quality")
      ->check(lockstep::IntegerIn(1, 100))
      ->capture_default_str();
  if (std::optional<int> exit_code = lockstep::ParseOrExitCode(app, argc, argv)) return *exit_code;

  // Sizes that do not fit in memory are refused there, before anything is made.
  absl::Status status = lockstep::dataset::WriteSampleDataset(out, options);
  if (!status.ok()) {
    std::cerr << lockstep::LogPrefix() << "error: " << status.message() << std::endl;
    return 1;
  }
  std::cout << lockstep::LogPrefix() << "wrote "
            << lockstep::dataset::SampleClassNames().size() *
                   (options.train_per_class + options.val_per_class)
            << " images to " << out << std::endl;
  return 0;
}
