// lockstep-make-sample: writes the built-in sample data set (dataset/sample_dataset.h), an
// ImageFolder of JPEGs with train/ and val/, to a directory.

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "core/logging.h"
#include "dataset/sample_dataset.h"

int main(int argc, char** argv) {
  lockstep::dataset::SampleDatasetOptions options;
  std::string out;
  CLI::App app{"Writes the built-in sample data set: OUT/train and OUT/val, ten classes of JPEGs."};
  app.add_option("out", out, "output directory")->required();
  app.add_option("--seed", options.seed, "seed of every image")->capture_default_str();
  app.add_option("--train-per-class", options.train_per_class, "training images per class")
      ->capture_default_str();
  app.add_option("--val-per-class", options.val_per_class, "validation images per class")
      ->capture_default_str();
  app.add_option("--height", options.height, "image height")->capture_default_str();
  app.add_option("--width", options.width, "image width")->capture_default_str();
  app.add_option("--quality", options.quality, "JPEG quality")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

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
