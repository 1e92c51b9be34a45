"""Lockstep's Python front end, in MindSpore 2.x's shape: a MindSpore data-parallel script runs
after ``mindspore`` is replaced by ``lockstep`` in its imports. Python builds the graph (Cells
traced once) and drives the loop; every step runs in C++."""

from lockstep import common, communication, context, dataset, nn, ops, train
from lockstep.common import Parameter, Tensor, dtype, set_seed, get_seed
from lockstep.common.dtype import (bfloat16, bool_, float16, float32, float64, int32, int64,
                                   uint8)
from lockstep.context import (GRAPH_MODE, PYNATIVE_MODE, ParallelMode, get_auto_parallel_context,
                              get_context, reset_auto_parallel_context, set_auto_parallel_context,
                              set_context)
from lockstep.train import (DynamicLossScaleManager, FixedLossScaleManager, Model,
                            load_checkpoint, load_param_into_net, save_checkpoint)
from lockstep import models

__version__ = "0.1.0"
