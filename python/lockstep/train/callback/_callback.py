"""Callback and RunContext, and the dispatcher the C++ loop calls with each event."""

from types import SimpleNamespace

import numpy as np

from lockstep.common.tensor import Tensor


class RunContext:
    """What a callback sees: original_args() gives the cb_params of MindSpore's callbacks
    (cur_epoch_num, cur_step_num, batch_num, epoch_num, net_outputs, ...)."""

    def __init__(self, cb_params):
        self._params = cb_params
        self._stop = False

    def original_args(self):
        return self._params

    def request_stop(self):
        """Ends training after this step, on this rank; every rank must ask alike."""
        self._stop = True

    def get_stop_requested(self):
        return self._stop


class Callback:
    """Override any of on_train_begin, on_train_epoch_begin, on_train_step_end,
    on_train_epoch_end, on_train_end (or the older begin, epoch_begin, step_end, epoch_end,
    end, which the new names call by default)."""

    def begin(self, run_context):
        pass

    def epoch_begin(self, run_context):
        pass

    def step_end(self, run_context):
        pass

    def epoch_end(self, run_context):
        pass

    def end(self, run_context):
        pass

    def on_train_begin(self, run_context):
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context):
        self.epoch_begin(run_context)

    def on_train_step_end(self, run_context):
        self.step_end(run_context)

    def on_train_epoch_end(self, run_context):
        self.epoch_end(run_context)

    def on_train_end(self, run_context):
        self.end(run_context)


class Dispatcher:
    """Turns the C++ loop's events into the Python callbacks' calls; `event` returns whether a
    callback asked to stop."""

    _METHODS = {"train_begin": "on_train_begin", "epoch_begin": "on_train_epoch_begin",
                "step_end": "on_train_step_end", "epoch_end": "on_train_epoch_end",
                "train_end": "on_train_end"}

    def __init__(self, callbacks, model, dataset, epochs, first_epoch):
        self._callbacks = callbacks
        self._params = SimpleNamespace(
            train_network=model.train_network, network=model.train_network,
            optimizer=model.optimizer, loss_fn=model.loss_fn, train_dataset=dataset,
            epoch_num=first_epoch + epochs, batch_num=dataset.get_dataset_size(),
            cur_epoch_num=first_epoch, cur_step_num=model.global_step, net_outputs=None,
            mode="train", parallel_mode=model.parallel_mode, device_number=model.device_number)
        self.context = RunContext(self._params)

    def event(self, name, info):
        params = self._params
        if "epoch" in info:
            params.cur_epoch_num = info["epoch"]
        if name == "step_end":
            params.cur_step_num = info["global_step"]
            params.net_outputs = Tensor(np.float32(info["loss"]))
            params.learning_rate = info["lr"]
        for callback in self._callbacks:
            getattr(callback, self._METHODS[name])(self.context)
        return self.context.get_stop_requested()
