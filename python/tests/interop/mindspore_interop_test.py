"""Lockstep's Python front end against MindSpore itself (PyPI's mindspore 2.10, in a venv kept
between runs; a reference for this test only, never a dependency of the package):

1. the API a ported script uses (api_signatures.py): every parameter MindSpore has, Lockstep has
   with the same name, kind and default, in the same order; the module paths and constants too.
   Each mismatch is one line: API, parameter, MindSpore's, Lockstep's.
2. checkpoints both ways: a Cell of Dense layers saved by lockstep.save_checkpoint loads with
   mindspore.load_checkpoint (and into MindSpore's twin of the Cell) to the same values, and a
   file MindSpore's save_checkpoint wrote loads with lockstep.load_checkpoint likewise.

Runs under Debian's Python with PYTHONPATH holding build/python; MindSpore's side runs in the
venv's Python (this file with --mindspore-side). Exits 77 (skipped) when the venv cannot be made,
e.g. without PyPI.

usage: mindspore_interop_test.py --venv DIR
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "testing"))
import api_signatures  # noqa: E402
import pypi_venv  # noqa: E402
from pypi_venv import SKIPPED  # noqa: E402

PACKAGE = "mindspore==2.10.*"
SHAPES = {"fc1.weight": (8, 4), "fc1.bias": (8,), "fc2.weight": (3, 8), "fc2.bias": (3,)}
# append_dict entries beside the parameters: MindSpore's number and text conventions.
EXTRAS = {"epoch_num": np.int64(3), "learning_rate": np.float32(0.25)}
TEXT = {"note": "saved by the interop test"}
TYPED = {"counts": np.arange(6, dtype=np.int32).reshape(2, 3),
         "half": np.linspace(-1, 1, 5).astype(np.float16)}


def mindspore_side(lockstep_file, out):
    """Under the venv: the API description; the Lockstep file as MindSpore reads it, alone and
    into its twin of the Cell (when Lockstep could write it); a file MindSpore writes, and the
    values it wrote."""
    import mindspore as ms
    from mindspore import nn

    with open(os.path.join(out, "mindspore_api.json"), "w") as f:
        json.dump(api_signatures.describe("mindspore"), f)
    ms.set_context(device_target="CPU")

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Dense(4, 8)
            self.relu = nn.ReLU()
            self.fc2 = nn.Dense(8, 3)

        def construct(self, x):
            return self.fc2(self.relu(self.fc1(x)))

    side = {"version": ms.__version__}
    if os.path.exists(lockstep_file):
        loaded = ms.load_checkpoint(lockstep_file)
        read = {name: value if isinstance(value, str) else value.asnumpy()
                for name, value in loaded.items()}
        np.savez(os.path.join(out, "read_by_mindspore.npz"),
                 **{name: v for name, v in read.items() if not isinstance(v, str)})
        net = Net()
        side["param_not_load"], _ = ms.load_param_into_net(net, loaded)
        side["text"] = {k: v for k, v in read.items() if isinstance(v, str)}
        np.savez(os.path.join(out, "loaded_by_mindspore.npz"),
                 **{p.name: p.asnumpy() for p in net.get_parameters()})

    written = Net()
    for i, param in enumerate(written.get_parameters()):  # biases too: no value all zeros
        param.set_data(ms.Tensor(np.random.default_rng(i).standard_normal(
            param.shape).astype(np.float32)))
    append = {**{k: (int(v) if v.dtype.kind == "i" else float(v)) for k, v in EXTRAS.items()},
              **TEXT, **{k: ms.Tensor(v) for k, v in TYPED.items()}}
    ms.save_checkpoint(written, os.path.join(out, "by_mindspore.ckpt"), append_dict=append)
    np.savez(os.path.join(out, "written_by_mindspore.npz"),
             **{p.name: p.asnumpy() for p in written.get_parameters()})
    with open(os.path.join(out, "mindspore_side.json"), "w") as f:
        json.dump(side, f)


def lockstep_net(values=None):
    """The same Cell in Lockstep; `values` name -> array become its initial values."""
    from lockstep import Tensor, nn

    def init(name):
        return None if values is None else Tensor(values[name])

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Dense(4, 8, weight_init=init("fc1.weight"), bias_init=init("fc1.bias"))
            self.relu = nn.ReLU()
            self.fc2 = nn.Dense(8, 3, weight_init=init("fc2.weight"), bias_init=init("fc2.bias"))

        def construct(self, x):
            return self.fc2(self.relu(self.fc1(x)))

    return Net()


class Checks:
    """Failures, one line each."""

    def __init__(self):
        self.failures = []

    def equal(self, what, expected, found):
        expected, found = np.asarray(expected), np.asarray(found)
        if expected.dtype != found.dtype or expected.shape != found.shape:
            self.failures.append(f"{what}: {expected.dtype}{list(expected.shape)} written, "
                                 f"{found.dtype}{list(found.shape)} read")
        elif not np.array_equal(expected, found):
            self.failures.append(f"{what}: values differ (largest difference "
                                 f"{np.max(np.abs(expected.astype(float) - found)):g})")

    def that(self, condition, message):
        if not condition:
            self.failures.append(message)

    def run(self, what, function, *args):
        """function(*args); an exception is a failure, with its traceback, and the rest runs."""
        try:
            function(*args)
        except Exception as error:  # noqa: BLE001 -- reported, then the other checks run
            traceback.print_exc()
            self.failures.append(f"{what}: {type(error).__name__}: {error}")


def check_api(out, checks):
    """Lockstep's description against MindSpore's; prints Lockstep's own extra parameters."""
    theirs = json.load(open(os.path.join(out, "mindspore_api.json")))
    ours = api_signatures.describe("lockstep")
    problems, stale = api_signatures.compare(theirs, ours)
    for path, param, mindspore, lockstep in problems:
        checks.failures.append(f"API {path}: {param}: MindSpore {mindspore}; Lockstep {lockstep}")
    for path, param in stale:
        checks.failures.append(f"ALLOWED entry ({path}, {param}) matches no mismatch: remove it")
    for (path, param), (_, _, reason) in api_signatures.ALLOWED.items():
        print(f"allowed: {path}: {param}: {reason}")
    for path, param in api_signatures.extras(theirs, ours):
        print(f"Lockstep's own (after MindSpore's, with a default): {path}: {param}")
    print(f"API: {len(api_signatures.APIS)} functions and classes, {len(api_signatures.MODULES)} "
          f"module paths, {len(api_signatures.CONSTANTS)} constants compared")


def check_lockstep_to_mindspore(out, checks):
    """Lockstep's file as MindSpore read it (the MindSpore side left what it read in `out`)."""
    side = json.load(open(os.path.join(out, "mindspore_side.json")))
    read = np.load(os.path.join(out, "read_by_mindspore.npz"))
    values = lockstep_values()
    expected = {**values, **EXTRAS, **TYPED}
    for name, value in expected.items():
        checks.that(name in read.files, f"mindspore.load_checkpoint: '{name}' missing")
        if name in read.files:
            checks.equal(f"mindspore.load_checkpoint of Lockstep's '{name}'", value, read[name])
    for name in sorted(set(read.files) - set(expected)):
        checks.failures.append(f"mindspore.load_checkpoint: '{name}' was never written")
    checks.that(side["text"] == TEXT, f"mindspore.load_checkpoint: text entries {side['text']}, "
                                      f"written {TEXT}")
    checks.that(side["param_not_load"] == [], "mindspore.load_param_into_net: not loaded: "
                                              f"{side['param_not_load']}")
    into_net = np.load(os.path.join(out, "loaded_by_mindspore.npz"))
    for name in SHAPES:
        checks.equal(f"MindSpore's net loaded from Lockstep's file, '{name}'", values[name],
                     into_net[name])
    print(f"checkpoints: {len(read.files) + len(side['text'])} entries Lockstep -> MindSpore "
          f"{side['version']}")


def check_mindspore_to_lockstep(out, checks):
    """MindSpore's file as Lockstep reads it, alone and into the same Cell."""
    import lockstep

    mindspore_file = os.path.join(out, "by_mindspore.ckpt")
    written = np.load(os.path.join(out, "written_by_mindspore.npz"))
    loaded = lockstep.load_checkpoint(mindspore_file)
    for name in SHAPES:
        checks.equal(f"lockstep.load_checkpoint of MindSpore's '{name}'", written[name],
                     loaded[name].asnumpy())
    for name, value in {**EXTRAS, **TYPED}.items():
        checks.that(name in loaded, f"lockstep.load_checkpoint: '{name}' missing")
        if name in loaded:
            checks.equal(f"lockstep.load_checkpoint of MindSpore's append_dict '{name}'", value,
                         loaded[name].asnumpy())
    checks.that({k: loaded.get(k) for k in TEXT} == TEXT,
                f"lockstep.load_checkpoint: text entries {[loaded.get(k) for k in TEXT]}")
    net = lockstep_net()
    param_not_load, _ = lockstep.load_param_into_net(net, loaded)
    checks.that(param_not_load == [], f"lockstep.load_param_into_net: not loaded: "
                                      f"{param_not_load}")
    for name, param in net.parameters_dict().items():
        checks.equal(f"Lockstep's net loaded from MindSpore's file, '{name}'", written[name],
                     param.asnumpy())
    print(f"checkpoints: {len(loaded)} entries MindSpore -> Lockstep")


def lockstep_values():
    """The parameters of the Cell Lockstep saves, by name."""
    rng = np.random.default_rng(11)
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in SHAPES.items()}


def save_lockstep_file(path):
    """A Cell of two Dense layers with known values, and append_dict entries, saved by Lockstep."""
    import lockstep

    values = lockstep_values()
    append = {**{k: (int(v) if v.dtype.kind == "i" else float(v)) for k, v in EXTRAS.items()},
              **TEXT, **{k: lockstep.Tensor(v) for k, v in TYPED.items()}}
    lockstep.save_checkpoint(lockstep_net(values), path, append_dict=append)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--venv")
    parser.add_argument("--mindspore-side", nargs=2, metavar=("LOCKSTEP_FILE", "OUT"),
                        help="(internal) run under the venv")
    args = parser.parse_args()
    if args.mindspore_side:
        mindspore_side(*args.mindspore_side)
        return 0
    start = time.monotonic()
    if not pypi_venv.ensure(args.venv, [PACKAGE], "mindspore"):
        return SKIPPED
    print(f"venv ready in {time.monotonic() - start:.0f} s")
    checks = Checks()
    with tempfile.TemporaryDirectory() as out:
        lockstep_file = os.path.join(out, "by_lockstep.ckpt")
        checks.run("lockstep.save_checkpoint", save_lockstep_file, lockstep_file)
        # MindSpore's side without build/python on its path; GLOG_v=3: its errors only.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["GLOG_v"] = "3"
        side = subprocess.run([pypi_venv.python_of(args.venv), __file__, "--mindspore-side",
                               lockstep_file, out], env=env)
        checks.that(side.returncode == 0, "MindSpore's side failed: its traceback is above")
        if os.path.exists(os.path.join(out, "mindspore_api.json")):
            checks.run("API comparison", check_api, out, checks)
        if os.path.exists(os.path.join(out, "read_by_mindspore.npz")):
            checks.run("Lockstep -> MindSpore", check_lockstep_to_mindspore, out, checks)
        if os.path.exists(os.path.join(out, "written_by_mindspore.npz")):
            checks.run("MindSpore -> Lockstep", check_mindspore_to_lockstep, out, checks)
    for failure in checks.failures:
        print(f"MISMATCH {failure}")
    print(f"{len(checks.failures)} mismatches, {time.monotonic() - start:.0f} s")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
