"""lockstep.communication: the job's ranks, as mindspore.communication.

``init()`` starts them from whichever launcher started the process: mpirun (or srun --mpi),
torchrun, lockstep-run or a plain srun (the env:// contract, host collectives over gloo), or
nothing (a world of one). After it, an uncaught error on one rank ends every rank: its traceback
on that rank (for errors from the script's own code) and one line naming the rank."""

import atexit
import gc
import sys
import traceback

from lockstep import _core

_context = None  # the job's parallel context, once init() ran
# MindSpore's default group argument: the world, the only group Lockstep has.
_WORLD_GROUP = "hccl_world_group"


def init(backend_name=None):
    """Starts the ranks (once). backend_name: None, "nccl" (GPU collectives) or "mccl" (CPU);
    the transport follows the launcher and the device, so the name only has to be one of those."""
    global _context
    if backend_name not in (None, "nccl", "mccl"):
        raise ValueError(f"init: backend_name={backend_name!r}: Lockstep has NCCL on GPUs and "
                         "MPI or gloo on CPUs (None, 'nccl' or 'mccl')")
    if _context is None:
        _context = _core.init()
        atexit.register(_finish)
        if _context.size > 1:
            sys.excepthook = _end_the_job


def _finish():
    """At exit, after the models let go of the context (their own atexit handlers run first):
    the last reference ends the ranks' communicators and finalizes MPI, as mpirun expects."""
    global _context
    _context = None
    gc.collect()


def _require():
    if _context is None:
        raise RuntimeError("the communication service is not started: call "
                           "lockstep.communication.init() first")
    return _context


def context():
    """The parallel context of init(), or None before it (a world of one)."""
    return _context


def get_rank(group=_WORLD_GROUP):
    return _require().rank


def get_group_size(group=_WORLD_GROUP):
    return _require().size


def get_local_rank(group=_WORLD_GROUP):
    return _require().local_rank


def get_local_rank_size(group=_WORLD_GROUP):
    return _require().local_size


def release():
    """Nothing to release early: the ranks end with the process."""


def _raised_in_lockstep(trace):
    """Whether the innermost frame is Lockstep's own (a job error, not the script's bug)."""
    frames = traceback.extract_tb(trace)
    return bool(frames) and "/lockstep/" in frames[-1].filename


def _end_the_job(kind, error, trace):
    if getattr(error, "lockstep_agreed", False):
        # Every rank holds this error and ends alike: rank 0 speaks for all, and the ranks exit
        # (status 1), finalizing MPI, instead of aborting the job.
        if _context.rank == 0:
            print(f"lockstep: error: {error}", file=sys.stderr, flush=True)
        return
    if issubclass(kind, KeyboardInterrupt):
        message = "interrupted (Ctrl-C)"
    else:
        if not _raised_in_lockstep(trace):
            traceback.print_exception(kind, error, trace)
        message = f"{kind.__name__}: {error}" if not _raised_in_lockstep(trace) else str(error)
    sys.stdout.flush()
    sys.stderr.flush()
    _core.abort_job(message)
