"""lockstep.context: set_context and the data-parallel settings, as mindspore.context."""

import warnings

GRAPH_MODE = 0
PYNATIVE_MODE = 1


class ParallelMode:
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"


_context = {"mode": GRAPH_MODE, "device_target": "CPU", "device_id": None}
_parallel = {}
# Settings MindSpore scripts commonly pass that change nothing in Lockstep's results.
_HARMLESS = {"save_graphs", "save_graphs_path", "max_call_depth", "enable_graph_kernel",
             "max_device_memory", "pynative_synchronize", "jit_config", "runtime_num_threads"}


def set_context(**kwargs):
    """mode=GRAPH_MODE (the only mode), device_target "CPU" or "GPU", device_id."""
    unknown = sorted(set(kwargs) - set(_context) - _HARMLESS)
    if unknown:
        raise ValueError(f"set_context: {', '.join(unknown)} not supported")
    mode = kwargs.get("mode", GRAPH_MODE)
    if mode != GRAPH_MODE:
        raise ValueError("set_context: mode must be GRAPH_MODE: Lockstep compiles every network "
                         "into a static graph and has no eager (PyNative) mode")
    target = kwargs.get("device_target", _context["device_target"])
    if target not in ("CPU", "GPU"):
        raise ValueError(f"set_context: device_target={target!r}: 'CPU' or 'GPU'")
    for key in _context:
        if key in kwargs:
            _context[key] = kwargs[key]


def get_context(attr_key):
    return _context[attr_key]


def set_auto_parallel_context(**kwargs):
    """parallel_mode (STAND_ALONE or DATA_PARALLEL), gradients_mean, device_num, global_rank,
    all_reduce_fusion_config, parameter_broadcast."""
    known = {"parallel_mode", "gradients_mean", "device_num", "global_rank",
             "all_reduce_fusion_config", "parameter_broadcast"}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise ValueError(f"set_auto_parallel_context: {', '.join(unknown)} not supported")
    mode = kwargs.get("parallel_mode", ParallelMode.STAND_ALONE)
    if mode not in (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL):
        raise ValueError(f"set_auto_parallel_context: parallel_mode={mode!r}: Lockstep is "
                         "data parallel (STAND_ALONE or DATA_PARALLEL)")
    if kwargs.get("parameter_broadcast"):
        warnings.warn("parameter_broadcast: every rank initializes the same parameters from the "
                      "same seed, and the ranks check it at start-up; nothing is broadcast",
                      stacklevel=2)
    _parallel.update(kwargs)


def get_auto_parallel_context(attr_key):
    defaults = {"parallel_mode": ParallelMode.STAND_ALONE, "gradients_mean": False,
                "device_num": 1, "global_rank": 0, "all_reduce_fusion_config": [],
                "parameter_broadcast": False}
    return _parallel.get(attr_key, defaults[attr_key])


def reset_auto_parallel_context():
    _parallel.clear()
