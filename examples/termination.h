// What a rank says when its job is cancelled. SIGTERM (scancel, a batch system's time limit or
// preemption, mpirun passing on its own) and SIGINT (Ctrl-C) print one line naming the rank, the
// signal and where the run can go on, then end the process by that same signal, so launchers
// see it as before. Nothing is saved on the way out: checkpoint files are written under a
// temporary name and renamed (core/file_io.h), and a step counts once its manifest is written,
// so a save the signal cuts short is abandoned whole and the newest complete step is where
// --resume goes on.
#pragma once

#include <string_view>

namespace lockstep {

// Installs the handlers; `ckpt_dir` is where this run's checkpoints go (empty: none).
void ExplainTermination(std::string_view ckpt_dir);

}  // namespace lockstep
