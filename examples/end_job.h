#pragma once

// How the binaries end a job when a device collective fails (CommOptions::on_device_failure):
// the library publishes the failure, and the rank's main thread normally meets it at its next
// collective or wait and ends the job through ReportFatal. It may be blocked where the failure
// cannot reach it (a stream synchronisation on a GPU whose peer died), so this gives it a few
// seconds, then reports the failure itself, which under MPI aborts every rank, and ends the
// process. EnvOptions installs it (env_options.h).

#include "core/status.h"

namespace lockstep {

void EndJobAfterGrace(const absl::Status& failure);

}  // namespace lockstep
