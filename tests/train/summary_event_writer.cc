// Writes a known series of scalars with SummaryWriter, for tensorboard_interop_test.py to read
// with TensorBoard's own reader.
//
// usage: summary_event_writer DIR

#include <cstdint>
#include <iostream>

#include "train/summary/summary_writer.h"

namespace lockstep::train::summary {
namespace {

absl::Status WriteSeries(const std::string& directory) {
  LS_ASSIGN_OR_RETURN(std::unique_ptr<SummaryWriter> writer, SummaryWriter::Open(directory));
  for (int64_t step = 1; step <= 30; ++step) {
    const int64_t epoch = (step + 9) / 10;
    LS_RETURN_IF_ERROR(writer->AddScalar("train/loss", epoch, step, 3.0 / step));
    LS_RETURN_IF_ERROR(writer->AddScalar("train/lr", epoch, step, 0.1 * (1.0 - step / 30.0)));
    if (step % 10 == 0) {
      LS_RETURN_IF_ERROR(writer->AddScalar("val/accuracy", epoch, step, step / 40.0));
      LS_RETURN_IF_ERROR(writer->AddScalar("val/loss", epoch, step, 1.0 / step));
    }
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace lockstep::train::summary

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: summary_event_writer DIR\n";
    return 2;
  }
  absl::Status status = lockstep::train::summary::WriteSeries(argv[1]);
  if (!status.ok()) {
    std::cerr << "summary_event_writer: " << status << "\n";
    return 1;
  }
  return 0;
}
