"""train.Model, as MindSpore's: a network, its loss and optimizer compiled into Lockstep's
training graph (train/model.h) when training or evaluation first needs it, with the batch size
and image shape of the data set it is given."""

import atexit
import hashlib
import warnings
import weakref

from lockstep import _core, communication, context
from lockstep.common.seed import get_seed
from lockstep.nn import _trace
from lockstep.nn.cell import Cell
from lockstep.nn.loss import SoftmaxCrossEntropyWithLogits
from lockstep.nn.optim import Momentum
from lockstep.train.callback._callback import Callback, Dispatcher
from lockstep.train.loss_scale_manager import DynamicLossScaleManager, FixedLossScaleManager

_NEVER = 2**62  # a fixed scale: its window never ends


class Model:
    def __init__(self, network, loss_fn=None, optimizer=None, metrics=None, eval_network=None,
                 eval_indexes=None, amp_level="O0", boost_level="O0", **kwargs):
        scale_manager = kwargs.pop("loss_scale_manager", None)
        if kwargs:
            raise ValueError(f"Model: {', '.join(sorted(kwargs))} not supported")
        if not isinstance(network, Cell):
            raise ValueError("Model: network must be a Cell")
        if not isinstance(loss_fn, SoftmaxCrossEntropyWithLogits):
            raise ValueError("Model: loss_fn must be nn.SoftmaxCrossEntropyWithLogits(sparse=True, "
                             "reduction='mean')")
        if optimizer is not None and not isinstance(optimizer, Momentum):
            raise ValueError("Model: optimizer must be nn.Momentum")
        if metrics is not None and set(metrics) - {"accuracy", "acc", "loss"}:
            raise ValueError(f"Model: metrics {sorted(set(metrics) - {'accuracy', 'acc', 'loss'})}"
                             " not supported ('accuracy', 'loss')")
        if eval_network is not None or eval_indexes is not None or boost_level != "O0":
            raise ValueError("Model: eval_network, eval_indexes and boost_level are not supported")
        self.train_network = network
        self.loss_fn = loss_fn
        self.optimizer = optimizer or Momentum(network.trainable_params(), 0.0, 0.0)
        self._metrics = set(metrics or ())
        self._amp_level = amp_level
        self._scale_manager = scale_manager
        self._core = None
        self.parallel_mode = context.get_auto_parallel_context("parallel_mode")
        self.device_number = 1

    @property
    def global_step(self):
        return self._core.global_step if self._core else 0

    def _loss_scaling(self):
        """(the loss scale, the dynamic scaling or None, what the optimizer's loss_scale is
        measured against)."""
        manager = self._scale_manager
        if manager is None:
            return 1.0, None, 1.0
        if isinstance(manager, DynamicLossScaleManager):
            return 1.0, _core.DynamicScale(manager.loss_scale, manager.scale_factor,
                                           manager.scale_window), 1.0
        if isinstance(manager, FixedLossScaleManager):
            if manager.drop_overflow_update:
                return 1.0, _core.DynamicScale(manager.loss_scale, 1.0, _NEVER), 1.0
            return manager.loss_scale, None, manager.loss_scale
        raise ValueError("Model: loss_scale_manager must be a FixedLossScaleManager or a "
                         "DynamicLossScaleManager")

    def _compile(self, dataset):
        """The C++ model for `dataset`'s batches, made and compiled once."""
        if self._core is not None:
            return
        communication.init()
        ctx = communication.context()
        data_parallel = self.parallel_mode == context.ParallelMode.DATA_PARALLEL
        device_num = context.get_auto_parallel_context("device_num")
        if data_parallel and device_num not in (1, ctx.size):
            raise ValueError(f"set_auto_parallel_context(device_num={device_num}) but the job "
                             f"has {ctx.size} ranks")
        if ctx.size > 1 and not data_parallel and ctx.rank == 0:
            warnings.warn(f"{ctx.size} ranks in STAND_ALONE mode train {ctx.size} separate "
                          "models: set_auto_parallel_context(parallel_mode="
                          "ParallelMode.DATA_PARALLEL) makes them one", stacklevel=3)
        self.device_number = ctx.size
        pipeline = dataset._pipeline()
        batch_size, image_shape = _core.batch_shape(pipeline)
        loss_scale, dynamic, scaled_by = self._loss_scaling()
        params = self.train_network.parameters_dict()  # names them too
        net = _trace.python_net(self.train_network)
        options = dict(
            batch_size=batch_size, image_shape=list(image_shape), seed=get_seed() or 0,
            learning_rates=self.optimizer.learning_rates, momentum=self.optimizer.momentum,
            weight_decay=self.optimizer.weight_decay, nesterov=self.optimizer.use_nesterov,
            gradient_divisor=self.optimizer.gradient_divisor(scaled_by), loss_scale=loss_scale,
            dynamic_loss_scale=dynamic, amp_level=self._amp_level,
            device="cuda" if context.get_context("device_target") == "GPU" else "cpu",
            data_parallel=data_parallel and ctx.size > 1,
            gradients_mean=context.get_auto_parallel_context("gradients_mean"),
            sync_batch_norm=False,
            all_reduce_fusion_config=list(
                context.get_auto_parallel_context("all_reduce_fusion_config")))
        _core.check_job(net, self.train_network.cls_name, "the training data set",
                        options["device"] == "cpu", _settings(options, len(params)), pipeline,
                        list(image_shape), ctx)
        self._core = _core.Model(net=net, context=ctx, **options)
        self._core.compile()
        self._bind(params)
        atexit.register(_release_at_exit, weakref.ref(self))

    def _bind(self, params):
        """Every Parameter of the network reads and writes the compiled model's variable."""
        compiled = {name for name, _ in self._core.parameters()}
        missing = sorted(set(params) - compiled)
        if missing:
            raise ValueError(f"parameters the graph never uses: {', '.join(missing[:5])}"
                             f"{' ...' if len(missing) > 5 else ''} (a Cell assigned in "
                             "__init__ but not called in construct)")
        for param in params.values():
            param._bind(self._core)

    def _release(self):
        """Lets go of the compiled model: its parameters keep their last values in Python."""
        for param in self.train_network.get_parameters():
            param._unbind()
        self._core = None

    def _callbacks(self, callbacks):
        if callbacks is None:
            return [], []
        if isinstance(callbacks, Callback):
            callbacks = [callbacks]
        native, python = [], []
        for callback in callbacks:
            if not isinstance(callback, Callback):
                raise ValueError(f"callbacks must be Callbacks, got {type(callback).__name__}")
            (native if hasattr(callback, "_native") else python).append(callback)
        return [c._native() for c in native], python

    def train(self, epoch, train_dataset, callbacks=None, dataset_sink_mode=False, sink_size=-1,
              initial_epoch=0):
        """Trains `epoch` epochs of train_dataset (each rank its shard); sink mode or not, the
        whole step runs in C++."""
        if sink_size != -1 or initial_epoch != 0:
            raise ValueError("Model.train: sink_size and initial_epoch are not supported")
        if epoch < 1:
            raise ValueError(f"Model.train: epoch must be >= 1, got {epoch}")
        self._compile(train_dataset)
        native, python = self._callbacks(callbacks)
        dispatcher = Dispatcher(python, self, train_dataset, epoch, self._core.epochs_done)
        self._core.train(epoch, train_dataset._pipeline(), native, dispatcher)

    def eval(self, valid_dataset, callbacks=None, dataset_sink_mode=False):
        """{"accuracy": ..., "loss": ...} over every rank's share of valid_dataset, each image
        once: the ranks agree their batch-norm statistics first, so this is one model's score."""
        if callbacks:
            raise ValueError("Model.eval: callbacks are not supported")
        self._compile(valid_dataset)
        result = self._core.eval(valid_dataset._pipeline())
        metrics = self._metrics or {"accuracy"}
        names = {"acc": "accuracy"}
        return {m: result[names.get(m, m)] for m in metrics}


def _settings(options, parameters):
    """What every rank's model must share, as (name, text) pairs: a per-step rate list by its
    length, ends and digest."""
    settings = [("parameters", str(parameters))]
    for name, value in sorted(options.items()):
        if name == "learning_rates":
            digest = hashlib.sha256(repr(value).encode()).hexdigest()[:12]
            value = f"{len(value)} rate(s), {value[0]:g} .. {value[-1]:g}, sha256 {digest}"
        elif isinstance(value, _core.DynamicScale):
            value = f"{value.initial:g}, {value.factor:g}, {value.window}"
        settings.append((name, str(value)))
    return settings


def _release_at_exit(model_ref):
    """A model still alive at exit lets go of the ranks' context before it ends."""
    model = model_ref()
    if model is not None and model._core is not None:
        model._release()
