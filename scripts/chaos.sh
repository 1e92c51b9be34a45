#!/usr/bin/env bash
# The long chaos test: builds lockstep-train, lockstep-ckpt, lockstep-make-sample and
# lockstep-run, then SIGKILLs a random rank of `mpirun -n 4 lockstep-train` 50 times, some kills
# during a checkpoint save, resuming after each, and checks the end against an uninterrupted run
# bit for bit (tests/train/chaos_test.py; CTest's train_chaos.np4 is the 5-kill version). Ends
# with one summary line: kills survived, kills during a save, steps re-done, bytes lost.
# --launcher lockstep-run does the same without MPI; --launcher lockstep-run-restarts kills the
# ranks of ONE `lockstep-run --max-restarts 50`, which restarts them itself (CTest's
# train_chaos_lockstep_run.np4 and train_chaos_restarts.np4 are the short versions).
#
#   scripts/chaos.sh [--launcher mpirun|lockstep-run|lockstep-run-restarts] [--kills N]
#                    [--seed S] [other chaos_test.py flags]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh lockstep-train lockstep-ckpt lockstep-make-sample lockstep-run
bin=${LOCKSTEP_BUILD_DIR:-build}/examples
exec /usr/bin/python3 tests/train/chaos_test.py --train "$bin/lockstep-train" \
  --ckpt "$bin/lockstep-ckpt" --make-sample "$bin/lockstep-make-sample" \
  --lockstep-run "$bin/lockstep-run" --kills 50 "$@"
