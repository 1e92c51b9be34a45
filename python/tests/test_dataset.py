"""lockstep.dataset over real JPEG files: labels, sharding, shuffling, the transforms' shapes and
types, batching, the iterators, and the MindSpore arguments it refuses by name."""

import itertools

import numpy as np
import pytest

import lockstep.common.seed
import lockstep.dataset as ds
from lockstep import _core
from lockstep.common import dtype as mstype
from lockstep.common.seed import set_seed
from lockstep.common.tensor import Tensor
from lockstep.dataset import transforms, vision
from lockstep.dataset.transforms import c_transforms as c_ops
from lockstep.dataset.vision import c_transforms as c_vision

from dataset_files import sample_id, write_image_folder

# Written unsorted; labels follow the sorted names: a_dog 0 (samples 0-3), b_cat 1 (4-6),
# c_fish 2 (7-9).
CLASSES = {"b_cat": 3, "a_dog": 4, "c_fish": 3}
LABELS = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
TO_FLOAT_CHW = [vision.Resize((8, 8)), vision.Normalize([127.5] * 3, [127.5] * 3),
                vision.HWC2CHW()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("images"))
    write_image_folder(root, CLASSES)
    return root


@pytest.fixture(autouse=True)
def no_seed(monkeypatch):
    monkeypatch.setattr(lockstep.common.seed, "_seed", None)


def ids(dataset):
    """The sample ids of one pass of an unbatched, decoded data set, in reading order."""
    return [sample_id(image) for image, _ in dataset.create_tuple_iterator(output_numpy=True)]


def test_labels_follow_the_sorted_class_folders(folder):
    data = ds.ImageFolderDataset(folder, shuffle=False, decode=True)
    rows = list(data.create_dict_iterator(output_numpy=True))
    assert [(sample_id(r["image"]), int(r["label"])) for r in rows] == list(enumerate(LABELS))
    assert rows[0]["label"].dtype == np.int32 and rows[0]["label"].shape == ()
    assert data.get_class_indexing() == {"a_dog": 0, "b_cat": 1, "c_fish": 2}
    assert data.num_classes() == 3
    assert data.get_col_names() == ["image", "label"]
    assert data.get_dataset_size() == 10


def test_class_indexing_picks_the_folders_and_their_labels(folder):
    data = ds.ImageFolderDataset(folder, shuffle=False, decode=True,
                                 class_indexing={"c_fish": 0, "a_dog": 5})
    rows = data.create_dict_iterator(output_numpy=True)
    assert [(sample_id(r["image"]), int(r["label"])) for r in rows] == [
        (0, 5), (1, 5), (2, 5), (3, 5), (7, 0), (8, 0), (9, 0)]
    assert data.get_class_indexing() == {"c_fish": 0, "a_dog": 5}
    assert data.num_classes() == 2


def test_shards_partition_the_samples(folder):
    halves = [ids(ds.ImageFolderDataset(folder, num_shards=2, shard_id=k, decode=True))
              for k in range(2)]
    assert [len(h) for h in halves] == [5, 5]
    assert sorted(halves[0] + halves[1]) == list(range(10))
    # As MindSpore's DistributedSampler: ceil(10 / 3) each, the last round padded by wrapping.
    thirds = [ds.ImageFolderDataset(folder, num_shards=3, shard_id=k, decode=True)
              for k in range(3)]
    assert [t.get_dataset_size() for t in thirds] == [4, 4, 4]
    read = sum((ids(t) for t in thirds), [])
    assert len(read) == 12 and set(read) == set(range(10))
    capped = ds.ImageFolderDataset(folder, num_shards=2, shard_id=1, num_samples=3, decode=True)
    assert len(ids(capped)) == 3 and set(ids(capped)) <= set(halves[1])


def test_shuffle_follows_the_seed_and_the_pass(folder):
    first = ids(ds.ImageFolderDataset(folder, decode=True))
    assert ids(ds.ImageFolderDataset(folder, decode=True)) == first
    assert sorted(first) == list(range(10)) and first != list(range(10))
    set_seed(7)
    assert ids(ds.ImageFolderDataset(folder, decode=True)) != first
    twice = ids(ds.ImageFolderDataset(folder, decode=True).repeat(2))
    assert sorted(twice[:10]) == sorted(twice[10:]) == list(range(10))
    assert twice[:10] != twice[10:]


@pytest.mark.parametrize("operations, shape, dtype", [
    ([], (24, 32, 3), np.uint8),
    ([vision.Resize(16)], (16, 21, 3), np.uint8),
    ([vision.Resize((8, 12))], (8, 12, 3), np.uint8),
    ([vision.RandomCrop(20, padding=4)], (20, 20, 3), np.uint8),
    ([vision.RandomCrop((10, 10))], (10, 10, 3), np.uint8),
    ([vision.RandomResizedCrop(10)], (10, 10, 3), np.uint8),
    ([vision.CenterCrop(16)], (16, 16, 3), np.uint8),
    ([vision.RandomHorizontalFlip(prob=1.0)], (24, 32, 3), np.uint8),
    ([vision.Normalize([0.0] * 3, [1.0] * 3)], (24, 32, 3), np.float32),
    ([vision.HWC2CHW()], (3, 24, 32), np.uint8),
    ([transforms.TypeCast(mstype.float32)], (24, 32, 3), np.float32),
    ([transforms.Compose([vision.Resize(12), vision.HWC2CHW()])], (3, 12, 16), np.uint8),
    ([c_vision.CenterCrop(8), c_ops.TypeCast(mstype.float32)], (8, 8, 3), np.float32),
])
def test_transforms_give_their_shapes_and_types(folder, operations, shape, dtype):
    data = ds.ImageFolderDataset(folder, shuffle=False).map([vision.Decode()] + operations)
    image, label = next(iter(data.create_tuple_iterator(output_numpy=True)))
    assert image.shape == shape and image.dtype == dtype
    assert label == 0


def test_normalize_works_on_the_0_to_255_scale(folder):
    data = ds.ImageFolderDataset(folder, shuffle=False, decode=True)
    data = data.map(vision.Normalize([8.0] * 3, [2.0] * 3), input_columns="image")
    images = [image for image, _ in data.create_tuple_iterator(output_numpy=True)]
    np.testing.assert_allclose(images[0], 0.0, atol=0.5)  # grey 8
    np.testing.assert_allclose(images[1], 3.0, atol=0.5)  # grey 14


@pytest.mark.parametrize("batch_size, drop_remainder, sizes", [
    (4, False, [4, 4, 2]), (4, True, [4, 4]), (5, True, [5, 5]), (10, False, [10]),
    (11, True, []),
])
def test_batches_and_dataset_size(folder, batch_size, drop_remainder, sizes):
    data = ds.ImageFolderDataset(folder, decode=True).map(TO_FLOAT_CHW)
    assert data.get_dataset_size() == 10
    batched = data.batch(batch_size, drop_remainder=drop_remainder)
    assert batched.get_dataset_size() == len(sizes)
    assert batched.get_batch_size() == batch_size
    batches = list(batched.create_tuple_iterator(output_numpy=True))
    assert [len(labels) for _, labels in batches] == sizes
    for images, labels in batches:
        assert images.shape[1:] == (3, 8, 8) and images.dtype == np.float32
        assert labels.dtype == np.int32
    repeated = batched.repeat(3)
    assert repeated.get_dataset_size() == 3 * len(sizes)
    assert len(list(repeated.create_tuple_iterator())) == 3 * len(sizes)


def test_iterators_give_tensors_and_read_num_epochs_passes(folder):
    data = ds.ImageFolderDataset(folder, decode=True).map(vision.Resize((8, 8))).batch(5)
    iterator = data.create_dict_iterator(num_epochs=2)
    first = list(iterator)
    assert len(first) == 2
    assert isinstance(first[0]["image"], Tensor) and first[0]["image"].dtype == mstype.uint8
    assert first[0]["image"].shape == (5, 8, 8, 3)
    assert first[0]["label"].dtype == mstype.int32 and first[0]["label"].shape == (5,)
    assert len(list(iterator)) == 2 and list(iterator) == []
    labels = list(data.create_tuple_iterator(columns=["label"], output_numpy=True))
    assert len(labels[0]) == 1 and sorted(np.concatenate([r[0] for r in labels])) == LABELS
    assert len(list(ds.ImageFolderDataset(folder, decode=True))) == 10


def test_an_endless_repeat_reads_on_and_counts_one_pass(folder):
    data = ds.ImageFolderDataset(folder, decode=True).repeat()
    assert data.get_dataset_size() == 10
    rows = list(itertools.islice(data.create_tuple_iterator(output_numpy=True), 25))
    assert len(rows) == 25


def test_the_label_column_takes_only_a_cast_to_int32(folder):
    data = ds.ImageFolderDataset(folder, shuffle=False, decode=True)
    for cast in (transforms.TypeCast(mstype.int32),
                 transforms.Compose([c_ops.TypeCast(np.int32)])):
        labels = [int(l) for _, l in data.map(cast, input_columns=["label"])
                  .create_tuple_iterator(output_numpy=True)]
        assert labels == LABELS
    with pytest.raises(ValueError, match="'label'.*TypeCast"):
        data.map(transforms.TypeCast(mstype.float32), input_columns="label")
    with pytest.raises(ValueError, match="'label'.*Decode"):
        data.map(vision.Decode(), input_columns="label")


BAD_ARGUMENTS = [
    ("sampler", lambda f, d: ds.ImageFolderDataset(f, sampler=object())),
    ("cache", lambda f, d: ds.ImageFolderDataset(f, cache=object())),
    ("decrypt", lambda f, d: ds.ImageFolderDataset(f, decrypt=lambda path: b"")),
    ("shard_id", lambda f, d: ds.ImageFolderDataset(f, num_shards=2)),
    ("num_shards", lambda f, d: ds.ImageFolderDataset(f, shard_id=0)),
    ("shard_id", lambda f, d: ds.ImageFolderDataset(f, num_shards=2, shard_id=2)),
    ("num_samples", lambda f, d: ds.ImageFolderDataset(f, num_samples=-1)),
    ("shuffle", lambda f, d: ds.ImageFolderDataset(f, shuffle="yes")),
    ("num_parallel_workers", lambda f, d: ds.ImageFolderDataset(f, num_parallel_workers=0)),
    ("interpolation", lambda f, d: vision.Resize(8, interpolation=vision.Inter.NEAREST)),
    ("size", lambda f, d: vision.Resize(0)),
    ("size", lambda f, d: vision.RandomCrop((8, 10))),
    ("padding", lambda f, d: vision.RandomCrop(8, padding=(1, 2))),
    ("pad_if_needed", lambda f, d: vision.RandomCrop(8, pad_if_needed=True)),
    ("padding_mode", lambda f, d: vision.RandomCrop(8, padding_mode=vision.Border.EDGE)),
    ("max_attempts", lambda f, d: vision.RandomResizedCrop(8, max_attempts=5)),
    ("scale", lambda f, d: vision.RandomResizedCrop(8, scale=(1.0, 0.5))),
    ("probability", lambda f, d: vision.RandomHorizontalFlip(prob=1.5)),
    ("is_hwc", lambda f, d: vision.Normalize([1.0], [1.0], is_hwc=False)),
    ("mean and std", lambda f, d: vision.Normalize([0.0, 0.0], [1.0])),
    ("to_pil", lambda f, d: vision.Decode(to_pil=True)),
    ("quality", lambda f, d: vision.encode_jpeg(np.zeros((2, 2, 3), np.uint8), quality=0)),
    ("TypeCast", lambda f, d: transforms.TypeCast(mstype.int64)),
    ("operations", lambda f, d: d.map(lambda image: image)),
    ("input_columns", lambda f, d: d.map(vision.HWC2CHW(), input_columns="pixels")),
    ("output_columns", lambda f, d: d.map(vision.HWC2CHW(), output_columns="other")),
    ("python_multiprocessing", lambda f, d: d.map(vision.HWC2CHW(), python_multiprocessing=True)),
    ("num_parallel_workers", lambda f, d: d.map(vision.HWC2CHW(), num_parallel_workers=-2)),
    ("batch_size", lambda f, d: d.batch(0)),
    ("per_batch_map", lambda f, d: d.batch(2, per_batch_map=lambda *columns: columns)),
    ("map after batch", lambda f, d: d.batch(2).map(vision.HWC2CHW())),
    ("batch after repeat", lambda f, d: d.repeat(2).batch(2)),
    ("count", lambda f, d: d.repeat(0)),
    ("num_epochs", lambda f, d: d.create_dict_iterator(num_epochs=0)),
    ("columns", lambda f, d: d.create_tuple_iterator(columns=["pixels"])),
    ("batch", lambda f, d: d._pipeline()),
]


@pytest.mark.parametrize("name, call", BAD_ARGUMENTS,
                         ids=[f"{i}-{name}" for i, (name, _) in enumerate(BAD_ARGUMENTS)])
def test_bad_arguments_raise_value_error_naming_them(folder, name, call):
    data = ds.ImageFolderDataset(folder, decode=True)
    with pytest.raises(ValueError, match=name):
        call(folder, data)


def test_unknown_keyword_arguments_are_type_errors(folder):
    with pytest.raises(TypeError, match="colour"):
        ds.ImageFolderDataset(folder).map(vision.Decode(), colour="red")


def test_missing_or_empty_folders_name_the_path(folder, tmp_path):
    missing = str(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match=missing):
        ds.ImageFolderDataset(missing)
    with pytest.raises(ValueError, match=str(tmp_path)):
        ds.ImageFolderDataset(str(tmp_path))  # no class folders


def test_extensions_select_files_without_case(folder):
    assert ds.ImageFolderDataset(folder, extensions=[".JPG"]).get_dataset_size() == 10
    with pytest.raises(ValueError, match="no image files"):
        ds.ImageFolderDataset(folder, extensions=[".png"])


def test_the_model_gets_the_batch_shape(folder):
    def batch_shape(operations):
        data = ds.ImageFolderDataset(folder, decode=True).map(operations).batch(4)
        return _core.batch_shape(data._pipeline())

    assert batch_shape(TO_FLOAT_CHW) == (4, [3, 8, 8])
    with pytest.raises(ValueError, match="without HWC2CHW"):
        batch_shape(TO_FLOAT_CHW[:2])
    with pytest.raises(ValueError, match="float32"):
        batch_shape([vision.Resize((8, 8)), vision.HWC2CHW()])


def test_encode_jpeg_takes_grey_images_and_tensors(tmp_path):
    (tmp_path / "grey").mkdir()
    encoded = vision.encode_jpeg(Tensor(np.full((6, 10), 100, np.uint8)))
    assert encoded.dtype == np.uint8 and encoded.ndim == 1
    (tmp_path / "grey" / "one.jpg").write_bytes(encoded.tobytes())
    image, _ = next(iter(ds.ImageFolderDataset(str(tmp_path), decode=True)))
    assert image.shape == (6, 10, 3)
    np.testing.assert_allclose(image.asnumpy(), 100, atol=1)
