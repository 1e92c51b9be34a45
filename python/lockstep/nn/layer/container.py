"""nn.SequentialCell and nn.CellList, as MindSpore's: children named by index ("0", "1", ...)
or by the keys of an OrderedDict."""

from collections import OrderedDict

from lockstep.nn.cell import Cell


class SequentialCell(Cell):
    def __init__(self, *args):
        super().__init__()
        cells = args[0] if len(args) == 1 and isinstance(args[0], (list, OrderedDict)) else args
        items = cells.items() if isinstance(cells, OrderedDict) else enumerate(cells)
        for name, cell in items:
            self.append_named(str(name), cell)

    def append_named(self, name, cell):
        if not isinstance(cell, Cell):
            raise TypeError(f"SequentialCell takes Cells, got {type(cell).__name__}")
        setattr(self, name, cell)

    def append(self, cell):
        self.append_named(str(len(self._cells)), cell)
        return self

    def __getitem__(self, index):
        return list(self._cells.values())[index]

    def __len__(self):
        return len(self._cells)

    def construct(self, x):
        for cell in self._cells.values():
            x = cell(x)
        return x


class CellList(Cell):
    """CellList(cells) or CellList(): MindSpore's (*args, **kwargs), of which it reads the list
    args[0] and auto_prefix."""

    def __init__(self, *args, **kwargs):
        if len(args) > 1 or set(kwargs) - {"auto_prefix"}:
            raise TypeError(f"CellList takes a list of Cells and auto_prefix, not {len(args)} "
                            f"arguments and {sorted(kwargs)}")
        super().__init__(kwargs.get("auto_prefix", True))
        for cell in args[0] if args else []:
            self.append(cell)

    def append(self, cell):
        if not isinstance(cell, Cell):
            raise TypeError(f"CellList takes Cells, got {type(cell).__name__}")
        setattr(self, str(len(self._cells)), cell)
        return self

    def __getitem__(self, index):
        return list(self._cells.values())[index]

    def __iter__(self):
        return iter(self._cells.values())

    def __len__(self):
        return len(self._cells)
