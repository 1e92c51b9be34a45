#pragma once

// Reads a TFRecord file (train/summary/tfrecord.h) record by record, checking both CRCs of
// every record, as TensorBoard's reader does: the tests' independent look at event files.

#include <string>
#include <vector>

#include "core/status.h"

namespace lockstep::train::testing {

// The records' data in file order. DataLoss, naming the file and the record's offset, for a
// truncated record or a CRC that does not match.
absl::StatusOr<std::vector<std::string>> ReadTfRecords(const std::string& path);

}  // namespace lockstep::train::testing
