"""Iterators over a data set, as MindSpore's create_dict_iterator and create_tuple_iterator give:
each `for` loop over one reads a pass of the data set, the next loop the next pass (reshuffled),
up to num_epochs passes."""

from lockstep import _core
from lockstep.common.tensor import Tensor

COLUMNS = ("image", "label")


class _Iterator:
    def __init__(self, pipeline, batched, columns, num_epochs, output_numpy):
        if not isinstance(num_epochs, int) or not (num_epochs == -1 or num_epochs >= 1):
            raise ValueError(f"num_epochs must be -1 (no limit) or positive, got {num_epochs!r}")
        unknown = [c for c in columns if c not in COLUMNS]
        if unknown:
            raise ValueError(f"columns {unknown} are not among the data set's {list(COLUMNS)}")
        self._reader = _core.PipelineReader(pipeline)
        self._batched = batched
        self._columns = list(columns)
        self._num_epochs = num_epochs
        self._output_numpy = output_numpy
        self._epoch = 0
        self._reading = False

    def __iter__(self):
        return self

    def __next__(self):
        if not self._reading:
            if self._num_epochs != -1 and self._epoch >= self._num_epochs:
                raise StopIteration
            self._reader.reset(self._epoch)
            self._reading = True
        batch = self._reader.next()
        if batch is None:
            self._reading = False
            self._epoch += 1
            raise StopIteration
        # An unbatched data set is read in batches of one.
        row = dict(zip(COLUMNS, batch if self._batched else (a[0, ...] for a in batch)))
        return self._row([row[c] if self._output_numpy else Tensor(row[c]) for c in self._columns])


class DictIterator(_Iterator):
    """Yields {"image": ..., "label": ...}."""

    def _row(self, values):
        return dict(zip(self._columns, values))


class TupleIterator(_Iterator):
    """Yields [image, label] (or the columns asked for, in their order)."""

    def _row(self, values):
        return values
