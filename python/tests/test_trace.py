"""Tracing: Cells written in Python compile to the C++ models' graphs, and what cannot be
compiled is an error naming the line of construct."""

import pytest

from lockstep import _core, models, nn, ops
from lockstep.nn import _trace


def fingerprint(net, size, batch=4):
    return _core.net_fingerprint(net, batch, [3, size, size])


_networks = []  # the networks of traced(), which their layers hold weakly


def traced(network):
    """The C++ layer that traces `network`, kept alive for the tests."""
    _networks.append(network)
    return _trace.python_net(network)


@pytest.mark.parametrize("name,python_net,size", [
    ("resnet8", lambda: models.cifar_resnet(8, 10), 32),
    ("lenet", lambda: models.lenet(10, 3), 32),
    ("resnet18", lambda: models.resnet18(10), 64),
    ("resnet50", lambda: models.resnet50(10), 224),
])
def test_python_models_trace_to_the_cxx_models_graphs(name, python_net, size):
    cxx = _core.model_by_name(name, 10)
    python = traced(python_net())
    assert fingerprint(python, size) == fingerprint(cxx, size)
    assert (_core.net_fingerprint(python, 2, [3, size, size], training=False)
            == _core.net_fingerprint(cxx, 2, [3, size, size], training=False))


def test_a_different_network_has_another_fingerprint():
    assert (fingerprint(traced(models.cifar_resnet(8, 10)), 32)
            != fingerprint(traced(models.cifar_resnet(8, 7)), 32))


def test_parameters_are_named_by_their_place_in_the_network():
    names = list(models.cifar_resnet(8, 10).parameters_dict())
    assert names[:6] == ["conv1.weight", "bn1.gamma", "bn1.beta", "bn1.moving_mean",
                         "bn1.moving_variance", "layer1.0.conv1.weight"]
    assert "layer2.0.downsample.0.weight" in names
    trainable = [p.name for p in models.cifar_resnet(8, 10).trainable_params()]
    assert "bn1.moving_mean" not in trainable and "fc.bias" in trainable


class Branchy(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="pad", padding=1)
        self.flatten = nn.Flatten()

    def construct(self, x):
        y = self.conv(x)
        if y:
            y = y + y
        return self.flatten(y)


class Mismatched(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, pad_mode="pad", padding=1)
        self.flatten = nn.Flatten()

    def construct(self, x):
        return self.flatten(self.conv(x) + x)


class Unsupported(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()

    def construct(self, x):
        return self.flatten(x - x)


class Stranger(nn.Cell):
    def construct(self, x):
        return nn.ReLU()(x)


def trace_error(net):
    with pytest.raises(ValueError) as error:
        fingerprint(traced(net), 8)
    return str(error.value)


def test_a_branch_on_a_traced_value_names_its_line():
    message = trace_error(Branchy())
    assert "test_trace.py" in message and "(if y:)" in message
    assert "a Python branch on a traced value" in message


def test_shapes_that_do_not_fit_name_the_line_and_the_op():
    message = trace_error(Mismatched())
    assert "(return self.flatten(self.conv(x) + x))" in message and "Add" in message


def test_an_unsupported_op_names_its_line():
    message = trace_error(Unsupported())
    assert "(return self.flatten(x - x))" in message and "'-' on traced values" in message


def test_a_cell_that_is_no_attribute_is_refused():
    assert "not an attribute of the network" in trace_error(Stranger())


def test_cells_do_not_run_outside_a_model():
    import numpy as np
    from lockstep import Tensor
    with pytest.raises(RuntimeError, match="no eager mode"):
        nn.ReLU()(Tensor(np.zeros(3, np.float32)))


def test_ops_primitives_trace_like_layers():
    class Head(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 1, pad_mode="valid")
            self.mean = ops.ReduceMean(keep_dims=True)
            self.flatten = nn.Flatten()
            self.fc = nn.Dense(4, 2)

        def construct(self, x):
            return self.fc(self.flatten(self.mean(ops.ReLU()(self.conv(x)), (2, 3))))

    assert len(fingerprint(traced(Head()), 8)) == 16


def test_same_padding_that_would_be_asymmetric_says_what_to_write():
    with pytest.raises(ValueError, match="pad_mode='pad', padding=1"):
        nn.Conv2d(3, 8, 3, stride=2)  # MindSpore's default pad_mode='same'
    assert nn.Conv2d(3, 8, 3) is not None  # stride 1: padding 1 on every side
