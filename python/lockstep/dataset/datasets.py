"""Data sets as mindspore.dataset's: ImageFolderDataset, and map, batch and repeat over it.

Each call returns a new data set and leaves its input as it was. The C++ pipeline
(dataset/dataset.h) runs the steps in one order, whatever the order of the calls: shard and
shuffle, map, batch, repeat. Calls it cannot run as MindSpore would (map after batch, batch after
repeat) raise ValueError rather than read other data."""

import dataclasses
import os
from typing import Optional, Tuple

from lockstep import _core
from lockstep.common import dtype as mstype
from lockstep.common.seed import get_seed
from lockstep.dataset._arguments import keyword_arguments, require_default
from lockstep.dataset.iterators import COLUMNS, DictIterator, TupleIterator
from lockstep.dataset.transforms.transforms import TypeCast, as_operations


@dataclasses.dataclass(frozen=True)
class _Plan:
    folder: object  # _core.ImageFolder: this shard's files, listed once
    transforms: Tuple = ()  # _core.Transform steps of the "image" column
    batch: Optional[Tuple[int, bool]] = None  # (batch_size, drop_remainder) once batched
    repeat: int = 1  # passes of the data per epoch; -1: forever
    workers: int = 0  # threads that load and transform; 0: one per core


def _workers(where, num_parallel_workers, current):
    """The pipeline has one pool of threads for loading, decoding and transforming: the last
    num_parallel_workers given (to the source, map or batch) sizes it."""
    if num_parallel_workers is None:
        return current
    if not isinstance(num_parallel_workers, int) or num_parallel_workers < 1:
        raise ValueError(
            f"{where}: num_parallel_workers must be a positive int, got {num_parallel_workers!r}")
    return num_parallel_workers


class Dataset:
    """A data set of ("image", "label") rows; ImageFolderDataset makes one."""

    def __init__(self, plan):
        self._plan = plan

    def _derive(self, **changes):
        return Dataset(dataclasses.replace(self._plan, **changes))

    def map(self, operations, input_columns=None, output_columns=None, num_parallel_workers=None,
            **kwargs):
        """Runs `operations` over a column of every sample: "image" (the default), or "label",
        which takes only TypeCast(int32) (labels are int32 already)."""
        kwargs.pop("max_rowsize", None)  # sizes python_multiprocessing's memory only
        keyword_arguments("map", kwargs, {"python_multiprocessing": False, "cache": None,
                                          "callbacks": None, "offload": None})
        column = self._column(input_columns)
        if output_columns not in (None, column, [column]):
            raise ValueError(f"map: output_columns={output_columns!r} is not supported; the "
                             f"result replaces the '{column}' column")
        operations = as_operations("map", "operations", operations)
        if self._plan.batch is not None:
            raise ValueError("map after batch is not supported: transforms run on each sample "
                             "before batching; call map before batch")
        workers = _workers("map", num_parallel_workers, self._plan.workers)
        if column == "label":
            for op in (leaf for op in operations for leaf in op._leaves()):
                if not (isinstance(op, TypeCast) and op.data_type == mstype.int32):
                    raise ValueError(f"map: the 'label' column takes only TypeCast(int32) (labels "
                                     f"are int32), not {type(op).__name__}")
            return self._derive(workers=workers)
        steps = tuple(step for op in operations for step in op._transforms)
        return self._derive(transforms=self._plan.transforms + steps, workers=workers)

    @staticmethod
    def _column(input_columns):
        """The column input_columns names (one of them; None: "image")."""
        names = [input_columns] if isinstance(input_columns, str) else input_columns
        if names is None:
            return "image"
        if isinstance(names, (list, tuple)) and len(names) == 1 and names[0] in COLUMNS:
            return names[0]
        raise ValueError(f"map: input_columns={input_columns!r} must name one of the columns "
                         f"{list(COLUMNS)}")

    def batch(self, batch_size, drop_remainder=False, num_parallel_workers=None, **kwargs):
        """Stacks batch_size consecutive samples; drop_remainder drops a last, smaller batch.
        Batches never span two passes of the data."""
        kwargs.pop("max_rowsize", None)  # sizes python_multiprocessing's memory only
        keyword_arguments("batch", kwargs, {
            "per_batch_map": None, "input_columns": None, "output_columns": None,
            "column_order": None, "pad_info": None, "python_multiprocessing": False})
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch: batch_size must be a positive int, got {batch_size!r}")
        if self._plan.batch is not None:
            raise ValueError("batch: the data set is batched already")
        if self._plan.repeat != 1:
            raise ValueError("batch after repeat is not supported: MindSpore's batches would span "
                             "the repeats, Lockstep's end with each; call batch before repeat")
        workers = _workers("batch", num_parallel_workers, self._plan.workers)
        return self._derive(batch=(batch_size, bool(drop_remainder)), workers=workers)

    def repeat(self, count=None):
        """Reads the data `count` times per pass (None or -1: forever), each time reshuffled."""
        if count is None or count == -1:
            count = -1
        elif not isinstance(count, int) or count < 1:
            raise ValueError(f"repeat: count must be None, -1 or a positive int, got {count!r}")
        repeat = -1 if -1 in (count, self._plan.repeat) else count * self._plan.repeat
        return self._derive(repeat=repeat)

    def get_dataset_size(self):
        """Batches per pass once batched, samples before. As MindSpore, an endless repeat counts
        as one pass."""
        return self._build().batches_per_epoch * max(self._plan.repeat, 1)

    def get_batch_size(self):
        return self._plan.batch[0] if self._plan.batch is not None else 1

    def get_col_names(self):
        return list(COLUMNS)

    def get_class_indexing(self):
        """Class folder name -> label."""
        names = self._plan.folder.class_names
        return {name: label for label, name in enumerate(names) if name}

    def num_classes(self):
        return len(self.get_class_indexing())

    def create_dict_iterator(self, num_epochs=-1, output_numpy=False, do_copy=False):
        """Rows as {"image": ..., "label": ...} of Tensors (numpy arrays with output_numpy);
        rows are always copies, whatever do_copy says."""
        return DictIterator(self._build(), self._plan.batch is not None, COLUMNS, num_epochs,
                            output_numpy)

    def create_tuple_iterator(self, columns=None, num_epochs=-1, output_numpy=False,
                              do_copy=False):
        """Rows as [image, label] (or `columns`, in their order)."""
        return TupleIterator(self._build(), self._plan.batch is not None, columns or COLUMNS,
                             num_epochs, output_numpy)

    def __iter__(self):
        return self.create_tuple_iterator(num_epochs=1)

    def _pipeline(self):
        """The _core.Pipeline that Model.train and Model.eval read."""
        if self._plan.batch is None:
            raise ValueError("Model.train and Model.eval read batches: call batch(batch_size) on "
                             "the data set")
        return self._build()

    def _build(self):
        batch_size, drop_remainder = self._plan.batch or (1, False)
        return _core.pipeline(self._plan.folder, list(self._plan.transforms), batch_size,
                              drop_remainder, self._plan.workers, self._plan.repeat)


class ImageFolderDataset(Dataset):
    """Images in dataset_dir/<class>/..., labelled by sorted class folder name (or
    class_indexing), as MindSpore's; labels are int32 (MindSpore's uint32 labels are what scripts
    cast to int32). Without extensions every file is listed, as in MindSpore; files that do not
    decode are skipped with a warning. Shuffling, sharding and random transforms draw from the
    seed set_seed set before the data set was made (0 without one), so every rank agrees."""

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, extensions=None, class_indexing=None, decode=False,
                 num_shards=None, shard_id=None, cache=None, decrypt=None):
        where = "ImageFolderDataset"
        require_default(where, sampler=(sampler, None), cache=(cache, None),
                        decrypt=(decrypt, None))
        if (num_shards is None) != (shard_id is None):
            missing = "shard_id" if shard_id is None else "num_shards"
            raise ValueError(f"{where}: num_shards and shard_id go together; {missing} is missing")
        if shuffle is not None and not isinstance(shuffle, bool):
            raise ValueError(f"{where}: shuffle={shuffle!r} must be None or a bool")
        options = _core.ImageFolderOptions()
        options.shuffle = shuffle is not False
        options.num_shards = 1 if num_shards is None else num_shards
        options.shard_id = 0 if shard_id is None else shard_id
        options.extensions = [] if extensions is None else list(extensions)  # None: every file
        options.class_indexing = dict(class_indexing or {})
        options.num_samples = num_samples or 0
        options.decode = bool(decode)
        options.seed = get_seed() or 0
        folder = _core.open_image_folder(os.fspath(dataset_dir), options)
        super().__init__(_Plan(folder, workers=_workers(where, num_parallel_workers, 0)))
