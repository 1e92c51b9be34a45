"""Cell, as mindspore.nn.Cell: a network written in Python, compiled into Lockstep's static graph.

A Cell's sub-cells and parameters are its attributes; their names, joined by dots from the
network's root ("layer1.0.conv1.weight"), name the parameters in the graph and in checkpoints.
There is no eager mode: ``construct`` runs once per graph, when a Model compiles the network,
on symbolic values (lockstep/nn/_trace.py), as MindSpore's GRAPH_MODE compiles it.
"""

from collections import OrderedDict

from lockstep.common.tensor import Parameter
from lockstep.nn import _trace


class Cell:
    """The base of every network and layer: subclasses define ``__init__`` and ``construct``."""

    def __init__(self, auto_prefix=True, flags=None):
        object.__setattr__(self, "_cells", OrderedDict())
        object.__setattr__(self, "_params", OrderedDict())
        self.training = False

    def __setattr__(self, name, value):
        if "_cells" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before setting "
                               f"attribute '{name}'")
        self._cells.pop(name, None)
        self._params.pop(name, None)
        if isinstance(value, Cell):
            self._cells[name] = value
        elif isinstance(value, Parameter):
            self._params[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._cells.pop(name, None)
        self._params.pop(name, None)
        object.__delattr__(self, name)

    @property
    def cls_name(self):
        return type(self).__name__

    def construct(self, *inputs):
        raise NotImplementedError(f"{self.cls_name} defines no construct")

    def __call__(self, *inputs):
        return _trace.call_cell(self, inputs)

    def set_train(self, mode=True):
        self.training = mode
        for cell in self._cells.values():
            cell.set_train(mode)
        return self

    def set_grad(self, requires_grad=True):
        return self

    def name_cells(self):
        """The direct sub-cells by attribute name."""
        return OrderedDict(self._cells)

    def cells(self):
        return list(self._cells.values())

    def cells_and_names(self, cells=None, name_prefix=""):
        """(name, cell) for this cell and every cell under it, depth first; the root's name is
        name_prefix ("" by default)."""
        yield name_prefix, self
        for name, cell in self._cells.items():
            child = f"{name_prefix}.{name}" if name_prefix else name
            yield from cell.cells_and_names(name_prefix=child)

    def parameters_and_names(self, name_prefix="", expand=True):
        """(name, parameter) for every parameter under this cell, each parameter once; naming
        them here is what gives every Parameter its name."""
        seen = set()
        for cell_name, cell in self.cells_and_names(name_prefix=name_prefix):
            for name, param in cell._params.items():
                if id(param) in seen:
                    continue
                seen.add(id(param))
                param.name = f"{cell_name}.{name}" if cell_name else name
                yield param.name, param

    def get_parameters(self, expand=True):
        for _, param in self.parameters_and_names():
            yield param

    def trainable_params(self, recurse=True):
        """The parameters the optimizer updates (not batch-norm running statistics)."""
        return [p for p in self.get_parameters() if p.requires_grad]

    def untrainable_params(self, recurse=True):
        return [p for p in self.get_parameters() if not p.requires_grad]

    def parameters_dict(self, recurse=True):
        """Every parameter (trainable or not) by name, in order."""
        return OrderedDict(self.parameters_and_names())

    def insert_param_to_cell(self, param_name, param, check_name_contain_dot=True):
        setattr(self, param_name, param)

    def insert_child_to_cell(self, child_name, child_cell):
        setattr(self, child_name, child_cell)

    def __repr__(self):
        return f"{self.cls_name}<{', '.join(self._cells)}>"
