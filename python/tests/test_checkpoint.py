"""save_checkpoint, load_checkpoint and load_param_into_net over the C++ checkpoint code: bit-exact
round trips, the files lockstep-train writes, files lockstep-ckpt reads, broken files."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lockstep.common.tensor import Parameter, Tensor
from lockstep.nn.cell import Cell
from lockstep.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint

BUILD = Path(os.environ.get("LOCKSTEP_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))


def tool(name):
    path = BUILD / "examples" / name
    if not path.exists():
        pytest.skip(f"{path} is not built")
    return str(path)


class Head(Cell):
    def __init__(self):
        super().__init__()
        self.bias = Parameter(Tensor(np.zeros(3, np.float32)), name="bias")


class TinyNet(Cell):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(Tensor(np.zeros((2, 3), np.float32)), name="weight")
        self.head = Head()


def odd_floats(shape, seed):
    """float32 of random bits: NaNs with payloads, infinities, denormals, -0.0."""
    bits = np.random.default_rng(seed).integers(0, 2**32, size=shape, dtype=np.uint32)
    return bits.view(np.float32)


def test_round_trip_is_bit_exact(tmp_path):
    values = {
        "f32": odd_floats((4, 5, 6), 0),
        "i32": np.array([[np.iinfo(np.int32).min, -1, 0], [1, 7, np.iinfo(np.int32).max]],
                        np.int32),
        "f32.scalar": np.array(-0.0, np.float32),
        "empty": np.zeros((0, 3), np.float32),
    }
    path = tmp_path / "values.ckpt"
    save_checkpoint([{"name": k, "data": Tensor(v)} for k, v in values.items()], str(path))
    loaded = load_checkpoint(str(path))
    assert list(loaded) == list(values)
    for name, expected in values.items():
        got = loaded[name].asnumpy()
        assert isinstance(loaded[name], Parameter) and loaded[name].name == name
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes(), name


def test_append_dict_and_text_entries(tmp_path):
    path = tmp_path / "net"  # ".ckpt" is appended, as MindSpore does
    save_checkpoint(TinyNet(), str(path),
                    append_dict={"epoch_num": 3, "step_num": 120, "lr": 0.5, "note": "résumé"})
    loaded = load_checkpoint(str(path) + ".ckpt")
    assert list(loaded) == ["weight", "head.bias", "epoch_num", "step_num", "lr", "note"]
    assert loaded["epoch_num"].asnumpy().dtype == np.int64
    assert loaded["epoch_num"].asnumpy().shape == () and int(loaded["step_num"].asnumpy()) == 120
    assert loaded["lr"].asnumpy().dtype == np.float32 and float(loaded["lr"].asnumpy()) == 0.5
    assert loaded["note"] == "résumé"


def test_load_param_into_net_and_its_lists(tmp_path):
    trained = TinyNet()
    trained.weight.set_data(np.arange(6, dtype=np.float32).reshape(2, 3))
    trained.head.bias.set_data(np.array([0.5, -1.5, 2.0], np.float32))
    path = tmp_path / "tiny.ckpt"
    save_checkpoint(trained, str(path), append_dict={"epoch_num": 1})

    net = TinyNet()
    param_dict = load_checkpoint(str(path))
    assert load_param_into_net(net, param_dict) == ([], ["epoch_num"])
    np.testing.assert_array_equal(net.weight.asnumpy(), trained.weight.asnumpy())
    np.testing.assert_array_equal(net.head.bias.asnumpy(), trained.head.bias.asnumpy())

    partial = {"weight": param_dict["weight"], "other": param_dict["head.bias"]}
    assert load_param_into_net(TinyNet(), partial) == (["head.bias"], ["other"])


def test_load_checkpoint_with_net_and_filters(tmp_path):
    path = tmp_path / "tiny.ckpt"
    trained = TinyNet()
    trained.weight.set_data(np.ones((2, 3), np.float32))
    save_checkpoint(trained, str(path))
    net = TinyNet()
    load_checkpoint(str(path), net=net)
    np.testing.assert_array_equal(net.weight.asnumpy(), np.ones((2, 3), np.float32))

    assert list(load_checkpoint(str(path), filter_prefix="head")) == ["weight"]
    assert list(load_checkpoint(str(path), specify_prefix=["head."])) == ["head.bias"]
    assert list(load_checkpoint(str(path), choice_func=lambda n: n != "weight")) == ["head.bias"]
    with pytest.raises(ValueError, match="no parameter left"):
        load_checkpoint(str(path), specify_prefix="nothing")
    saved = tmp_path / "only_head.ckpt"
    save_checkpoint(trained, str(saved), choice_func=lambda n: n.startswith("head"))
    assert list(load_checkpoint(str(saved))) == ["head.bias"]


def test_names_under_one_more_prefix_load_without_strict_load():
    weight = Parameter(Tensor(np.full((2, 3), 2.0, np.float32)), name="network.weight")
    bias = Parameter(Tensor(np.full(3, 3.0, np.float32)), name="network.head.bias")
    wrapped = {"network.weight": weight, "network.head.bias": bias}
    assert load_param_into_net(TinyNet(), wrapped, strict_load=True) == (
        ["weight", "head.bias"], ["network.weight", "network.head.bias"])
    net = TinyNet()
    assert load_param_into_net(net, wrapped) == ([], [])
    np.testing.assert_array_equal(net.head.bias.asnumpy(), bias.asnumpy())


def test_shape_and_dtype_mismatches_name_the_parameter():
    with pytest.raises(ValueError, match=r"'weight' has shape \[2, 3\] .*\[3, 2\]"):
        load_param_into_net(TinyNet(), {"weight": Tensor(np.zeros((3, 2), np.float32))})
    wider = {"weight": Tensor(np.ones((2, 3), np.float64))}
    with pytest.raises(ValueError, match="'weight' is Float32 in the net, float64"):
        load_param_into_net(TinyNet(), wider, strict_load=True)
    net = TinyNet()
    load_param_into_net(net, wider)  # float into float converts without strict_load
    np.testing.assert_array_equal(net.weight.asnumpy(), np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="'weight' is Float32 in the net, int32"):
        load_param_into_net(TinyNet(), {"weight": Tensor(np.ones((2, 3), np.int32))})


def test_unsupported_arguments_are_named(tmp_path):
    path = str(tmp_path / "x.ckpt")
    for kwargs, name in [({"enc_key": b"0" * 16}, "enc_key"), ({"async_save": True}, "async_save"),
                         ({"format": "safetensors"}, "format"), ({"incremental": True},
                                                                 "incremental")]:
        with pytest.raises(ValueError, match=f"save_checkpoint: {name} not supported"):
            save_checkpoint(TinyNet(), path, **kwargs)
    assert not os.path.exists(path)
    save_checkpoint(TinyNet(), path)
    for kwargs, name in [({"dec_key": b"0" * 16}, "dec_key"),
                         ({"remove_redundancy": True}, "remove_redundancy")]:
        with pytest.raises(ValueError, match=f"load_checkpoint: {name} not supported"):
            load_checkpoint(path, **kwargs)
    with pytest.raises(TypeError, match="Cell, list or dict"):
        save_checkpoint(Tensor(np.zeros(2, np.float32)), path)


def test_broken_files_raise_naming_the_file(tmp_path):
    path = tmp_path / "good.ckpt"
    save_checkpoint(TinyNet(), str(path), append_dict={"epoch_num": 1})
    content = path.read_bytes()

    flipped = tmp_path / "flipped.ckpt"
    flipped.write_bytes(content[:40] + bytes([content[40] ^ 0xFF]) + content[41:])
    with pytest.raises(ValueError, match=f"{flipped}.*CRC mismatch"):
        load_checkpoint(str(flipped))

    truncated = tmp_path / "truncated.ckpt"
    truncated.write_bytes(content[:-30])
    with pytest.raises(ValueError, match=str(truncated)):
        load_checkpoint(str(truncated))

    # Without its trailer the file is what MindSpore writes by default: it loads unless
    # crc_check asks for the trailer.
    no_trailer = tmp_path / "no_trailer.ckpt"
    no_trailer.write_bytes(content[:-17])
    assert list(load_checkpoint(str(no_trailer))) == ["weight", "head.bias", "epoch_num"]
    with pytest.raises(ValueError, match=f"{no_trailer}: no crc_num trailer"):
        load_checkpoint(str(no_trailer), crc_check=True)

    with pytest.raises(FileNotFoundError, match="missing.ckpt"):
        load_checkpoint(str(tmp_path / "missing.ckpt"))


def test_python_file_reads_in_lockstep_ckpt(tmp_path):
    path = tmp_path / "py.ckpt"
    save_checkpoint([{"name": "w", "data": Tensor(odd_floats((3, 4), 1))},
                     {"name": "ids", "data": Tensor(np.arange(5, dtype=np.int32))}],
                    str(path), append_dict={"step_num": 7})
    listing = json.loads(subprocess.run([tool("lockstep-ckpt"), "list", "--json", str(path)],
                                        check=True, capture_output=True, text=True).stdout)
    assert listing["crc"]["status"] == "ok"
    assert [(t["name"], t["dtype"], t["shape"]) for t in listing["tensors"]] == [
        ("w", "Float32", [3, 4]), ("ids", "Int32", [5]), ("step_num", "Int64", [])]


def test_lockstep_train_checkpoint_loads_and_saves_back_byte_for_byte(tmp_path):
    data, ckpt_dir = tmp_path / "data", tmp_path / "ckpt"
    subprocess.run([tool("lockstep-make-sample"), "--train-per-class", "2", "--val-per-class",
                    "1", "--height", "32", "--width", "32", str(data)], check=True,
                   capture_output=True)
    subprocess.run([tool("lockstep-train"), "--data", str(data), "--model", "lenet", "--epochs",
                    "1", "--batch-size", "4", "--threads", "1", "--workers", "1", "--device",
                    "cpu", "--ckpt-dir", str(ckpt_dir)], check=True, capture_output=True)
    (written,) = ckpt_dir.glob("*.ckpt")
    listing = json.loads(subprocess.run([tool("lockstep-ckpt"), "list", "--json", str(written)],
                                        check=True, capture_output=True, text=True).stdout)

    loaded = load_checkpoint(str(written))
    assert [(name, list(p.shape)) for name, p in loaded.items()] == [
        (t["name"], t["shape"]) for t in listing["tensors"]]
    assert int(loaded["epoch_num"].asnumpy()) == 1
    resaved = tmp_path / "resaved.ckpt"
    save_checkpoint(loaded, str(resaved))
    assert resaved.read_bytes() == written.read_bytes()
