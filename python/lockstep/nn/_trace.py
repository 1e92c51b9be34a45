"""Tracing: a Cell's construct, run on symbolic values, adds its nodes to the graph a Model
compiles. The C++ side (python/src/trace_bindings.cc) calls ``trace`` once per graph it builds
(the training graph, each eval batch size); a Cell called outside a trace is an error, as there
is no eager mode.

Each Cell builds under the context of its place in the network, so nodes and parameters get the
names the C++ layers give them ("layer1.0.conv1/Conv2D_12", "layer1.0.conv1.weight"); ops on
values (``a + b``) are named after the Cell whose construct applies them.
"""

import traceback
import weakref

from lockstep import _core


class TraceError(ValueError):
    """What cannot be compiled into the static graph, named with the line of construct."""


_active = None  # the trace in progress


class _Trace:
    def __init__(self, root, ctx):
        self.root_ctx = ctx
        self.paths = {id(cell): name for name, cell in root.cells_and_names()}
        self.contexts = []  # of the Cells whose construct is running, innermost last

    def context_of(self, cell):
        path = self.paths.get(id(cell))
        if path is None:
            raise TraceError(f"{cell.cls_name} is called in construct but is not an attribute of "
                             "the network: assign it in __init__, so that its parameters have "
                             "names")
        return self.root_ctx.child(path) if path else self.root_ctx


def _no_eager():
    return RuntimeError("a Cell runs only when a Model compiles it (Lockstep has no eager "
                        "mode, as MindSpore's GRAPH_MODE): call Model.train or Model.eval")


def current_context():
    """The context of the Cell whose construct is running."""
    if _active is None or not _active.contexts:
        raise _no_eager()
    return _active.contexts[-1]


def call_cell(cell, inputs):
    """A Cell called in construct: a layer adds its nodes, a network runs its construct."""
    if _active is None:
        raise _no_eager()
    ctx = _active.context_of(cell)
    if hasattr(cell, "_build"):
        if len(inputs) != 1 or not isinstance(inputs[0], SymbolicTensor):
            raise TraceError(f"{cell.cls_name} takes one traced value")
        return SymbolicTensor(cell._build(ctx, inputs[0].value))
    _active.contexts.append(ctx)
    try:
        return cell.construct(*inputs)
    finally:
        _active.contexts.pop()


def apply_op(op, inputs, attrs=None):
    """A graph op on traced values, named after the running Cell."""
    for x in inputs:
        if not isinstance(x, SymbolicTensor):
            raise TraceError(f"{op} takes traced values, got {type(x).__name__}")
    return SymbolicTensor(current_context().op(op, [x.value for x in inputs], attrs or {}))


def _located(error):
    """The error's message after the line of construct it came from."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.name == "construct"]
    message = str(error) if isinstance(error, TraceError) else f"{type(error).__name__}: {error}"
    if not frames:
        return message
    frame = frames[-1]
    return f"construct at {frame.filename}:{frame.lineno} ({(frame.line or '').strip()}): {message}"


def trace(root, ctx, images):
    """Runs root's construct on the graph input `images`; returns its output value."""
    global _active
    if root is None:
        raise TraceError("the network was freed before its model compiled it")
    if _active is not None:
        raise TraceError("a network's construct may not compile another network")
    _active = _Trace(root, ctx)
    try:
        out = root(SymbolicTensor(images))
        if not isinstance(out, SymbolicTensor):
            raise TraceError(f"construct of {root.cls_name} must return one traced value (the "
                             f"logits), got {type(out).__name__}")
        return out.value
    except Exception as error:  # every error, worded with its place in construct
        raise TraceError(_located(error)) from error
    finally:
        _active = None


def _unsupported(name):
    def refuse(self, *args):
        raise TraceError(f"'{name}' on traced values is not supported (Lockstep compiles "
                         "construct into its own ops: +, * or / by a number, and the nn layers)")
    return refuse


class SymbolicTensor:
    """A value of the graph being traced: its shape and dtype are known, its numbers are not."""

    def __init__(self, value):
        self.value = value

    @property
    def shape(self):
        return tuple(self.value.shape)

    @property
    def ndim(self):
        return len(self.value.shape)

    @property
    def dtype(self):
        return self.value.dtype

    def __add__(self, other):
        return apply_op("Add", [self, other])

    __radd__ = __add__

    def __mul__(self, other):
        if not isinstance(other, (int, float)):
            raise TraceError("* takes a traced value and a number")
        return apply_op("Scale", [self], {"scale": float(other)})

    __rmul__ = __mul__

    def __truediv__(self, other):
        if not isinstance(other, (int, float)):
            raise TraceError("/ takes a traced value and a number")
        return self * (1.0 / other)

    def __neg__(self):
        return self * -1.0

    def __bool__(self):
        raise TraceError("a Python branch on a traced value: its numbers are not known when "
                         "construct is compiled (once, into a static graph); branch on "
                         "attributes set in __init__ instead")

    __sub__ = __rsub__ = _unsupported("-")
    __matmul__ = __rmatmul__ = _unsupported("@")
    __pow__ = _unsupported("**")
    __getitem__ = _unsupported("[]")
    __lt__ = __le__ = __gt__ = __ge__ = _unsupported("comparison")
    __iter__ = _unsupported("iteration")
    __len__ = _unsupported("len()")

    def asnumpy(self):
        raise TraceError("asnumpy() in construct: a traced value has no numbers yet")

    def __repr__(self):
        return f"SymbolicTensor(shape={list(self.shape)}, dtype={self.dtype})"


def python_net(root):
    """The C++ layer that traces `root` whenever a graph is built. It holds `root` weakly: the
    network's Parameters hold the compiled model, and a strong reference back would make a cycle
    through C++ that Python's collector cannot see (the model, and with it the ranks' context,
    would never be freed)."""
    network = weakref.ref(root)
    return _core.python_net(lambda ctx, images: trace(network(), ctx, images))
