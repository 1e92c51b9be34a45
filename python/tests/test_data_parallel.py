"""The seed-style script (python/examples/train_resnet.py, MindSpore's data-parallel recipe):
alone, under mpirun -n 2 and -n 4, it trains the model lockstep-train trains, bit for bit, and
reaches its accuracy; what goes wrong on one rank ends every rank."""

import os
import re
import signal
import subprocess
import time

import pytest

from launch import SCRIPTS, binary, environment, make_sample, python, ranks, run

EPOCHS = 2
STEPS_PER_EPOCH = 18  # 600 training images, a global batch of 32


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_sample(tmp_path_factory.mktemp("sample") / "data")


def checkpoints(directory):
    return sorted(f for f in os.listdir(directory) if f.endswith((".ckpt", ".meta")))


@pytest.mark.parametrize("n", [1, 2, 4])
def test_the_script_trains_what_lockstep_train_trains(sample, tmp_path, n):
    script = run(ranks(n) + python(os.path.join(SCRIPTS, "train_resnet.py"), "--data_path",
                                   sample, "--epochs", str(EPOCHS), "--ckpt_path",
                                   str(tmp_path / "python")))
    assert script.returncode == 0, script.stdout + script.stderr
    cxx = run(ranks(n) + [binary("lockstep-train"), "--data", sample, "--model", "resnet8",
                          "--epochs", str(EPOCHS), "--batch-size", "32", "--lr", "0.1",
                          "--loss-scale", "1024", "--ckpt-dir", str(tmp_path / "cxx"),
                          "--save-steps", str(STEPS_PER_EPOCH), "--save-epochs", "0",
                          "--keep-max", "3", "--progress", "lines",
                          "--threads", "1"])  # OMP_NUM_THREADS=1 on the Python side
    assert cxx.returncode == 0, cxx.stdout + cxx.stderr
    files = checkpoints(tmp_path / "cxx")
    assert len(files) == n * (EPOCHS + 1)  # a .ckpt per rank and epoch, a .meta per rank
    assert checkpoints(tmp_path / "python") == files
    for name in files:
        with open(tmp_path / "cxx" / name, "rb") as a, open(tmp_path / "python" / name, "rb") as b:
            assert a.read() == b.read(), name
    accuracy = re.search(r"validation accuracy (\S+)", script.stdout).group(1)
    last_epoch = cxx.stdout.strip().splitlines()[-1]
    assert f"val accuracy {accuracy} " in last_epoch, (script.stdout, last_epoch)


FAILING_CALLBACK = """
import lockstep as ms, lockstep.dataset as ds, lockstep.dataset.vision as vision
from lockstep import nn
from lockstep.communication import init, get_rank, get_group_size
from lockstep.train.callback import Callback

class FailOnRankOne(Callback):
    def on_train_step_end(self, run_context):
        if get_rank() == 1 and run_context.original_args().cur_step_num == 3:
            raise ValueError("the callback gave up")

init()
ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
data = ds.ImageFolderDataset(DATA, num_shards=get_group_size(), shard_id=get_rank())
data = data.map([vision.Decode(), vision.Resize(32), vision.CenterCrop(32),
                 vision.Normalize([127.5] * 3, [127.5] * 3), vision.HWC2CHW()]).batch(
    8, drop_remainder=True)
net = ms.models.cifar_resnet(8, 10)
model = ms.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                 nn.Momentum(net.trainable_params(), 0.01, 0.9))
model.train(100, data, callbacks=[FailOnRankOne()])
"""


@pytest.mark.parametrize("launcher", ["mpirun", "lockstep-run"])
def test_a_callback_that_raises_ends_every_rank(sample, tmp_path, launcher):
    script = tmp_path / "fail.py"
    script.write_text(f"DATA = {os.path.join(sample, 'train')!r}\n" + FAILING_CALLBACK)
    started = time.monotonic()
    result = run(ranks(2, launcher) + python(str(script)), timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert time.monotonic() - started < 90, output
    # Rank 1: the traceback into the script, then one line; no rank trains on.
    assert "Traceback (most recent call last)" in output and "in on_train_step_end" in output
    assert "lockstep: [rank 1] error: ValueError: the callback gave up" in output
    assert output.count("Traceback") == 1, output


def test_ctrl_c_under_mpirun_ends_every_rank(sample, tmp_path):
    script = tmp_path / "forever.py"
    script.write_text(f"DATA = {os.path.join(sample, 'train')!r}\n" +
                      FAILING_CALLBACK.replace("model.train(100, data, callbacks=[FailOnRankOne()])",
                                               "print('training', flush=True)\n"
                                               "model.train(1000, data)"))
    mpirun = subprocess.Popen(ranks(2) + python(str(script)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=environment(),
                              start_new_session=True)
    try:
        for line in mpirun.stdout:
            if "training" in line:
                break
        time.sleep(2)  # inside the C++ loop
        os.killpg(mpirun.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's process group
        mpirun.wait(timeout=60)
    finally:
        if mpirun.poll() is None:
            os.killpg(mpirun.pid, signal.SIGKILL)
    assert mpirun.returncode != 0
    ps = subprocess.run(["pgrep", "-f", str(script)], capture_output=True, text=True)
    assert ps.stdout.strip() == "", "ranks left running"


def test_ranks_that_set_up_different_models_end_with_one_message(sample, tmp_path):
    script = tmp_path / "differ.py"
    script.write_text(f"DATA = {os.path.join(sample, 'train')!r}\n" + FAILING_CALLBACK.replace(
        "nn.Momentum(net.trainable_params(), 0.01, 0.9)",
        "nn.Momentum(net.trainable_params(), 0.01 * (1 + get_rank()), 0.9)"))
    result = run(ranks(2) + python(str(script)), timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert output.count("lockstep: error: the ranks' scripts set up different models") == 1, output
    assert "learning_rates (1 rate(s), 0.01 .. 0.01" in output, output
    assert "Traceback" not in output and "MPI_Abort" not in output, output
