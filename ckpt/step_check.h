#pragma once

// The checks of a saved step that lockstep-ckpt verify and resume share, so that resume trusts
// no step verify would reject: the manifest, the graph .meta files and the rank files it names.

#include <functional>
#include <string>
#include <vector>

#include "ckpt/manifest.h"
#include "ckpt/reader.h"

namespace lockstep::ckpt {

struct VerifyReport {
  std::vector<std::string> checked;   // files read and found good
  std::vector<std::string> problems;  // empty when the step is good
};

// Called with each rank file that could be read, after its own checks; may add problems (verify
// compares the replicas).
using ReadFileCheck =
    std::function<void(const proto::RankFile& file, CheckpointData data, VerifyReport* report)>;

// Checks a saved step: the manifest is consistent (world size, one file per rank, each named for
// the manifest's step), and for each rank of `ranks` (every listed rank when empty): its graph
// .meta carries the manifest's fingerprint, its file is present (in one of `dirs`) with the
// recorded size and CRC, and its epoch_num/step_num are the manifest's.
VerifyReport CheckStep(const std::vector<std::string>& dirs, const proto::Manifest& manifest,
                       const std::vector<int>& ranks = {},
                       const ReadFileCheck& read_file_check = nullptr);

}  // namespace lockstep::ckpt
