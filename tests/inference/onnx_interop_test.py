"""Exports LeNet, ResNet-8 and ResNet-18 (trained a few steps by inference_fixture) with
`lockstep-ckpt export`, with and without --fold-bn, checks each file with ONNX's own checker
(Debian's python3-onnx), and runs it on the sample dataset's validation images with an
independent runtime: OpenCV's dnn (python3-opencv) or onnxruntime (PyPI, in a venv cached between
runs). Logits must be within 1e-4 of Lockstep's own evaluation (relative to the largest logit
where that exceeds 1: float32 keeps about 7 digits), with the same top-1. Also: a
truncated or tampered checkpoint, or another model's .meta, fails clearly and writes no file.
Exits 77 (skipped) when the runtime cannot be had.

usage: onnx_interop_test.py --fixture BIN --ckpt-tool lockstep-ckpt --runtime opencv|onnxruntime
                            [--venv DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import pypi_venv  # noqa: E402
from pypi_venv import SKIPPED  # noqa: E402

MODELS = [("lenet", 32), ("resnet8", 32), ("resnet18", 32)]
ORT_PACKAGES = ["onnxruntime", "numpy"]
TOLERANCE = 1e-4


def run_onnxruntime(path, images_npy):
    """Runs under the venv's Python; prints the logits as JSON."""
    import numpy as np
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    (logits,) = session.run(["logits"], {"images": np.load(images_npy)})
    print(json.dumps(logits.tolist()))


def logits_of(runtime, path, images_npy, venv):
    import numpy as np

    if runtime == "opencv":
        import cv2

        net = cv2.dnn.readNetFromONNX(path)
        net.setInput(np.load(images_npy), "images")
        return net.forward("logits")
    python = pypi_venv.python_of(venv)
    out = subprocess.run([python, __file__, "--ort-run", path, images_npy], check=True,
                         capture_output=True, text=True).stdout
    return np.array(json.loads(out), dtype=np.float32)


def check_file(path, expected_classes):
    import onnx

    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version >= 13, model.opset_import
    batch = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert batch.dim_param, f"batch dimension is not dynamic: {batch}"
    meta = {p.key: p.value for p in model.metadata_props}
    for key in ("image_size", "mean", "std", "channel_order", "class_names"):
        assert key in meta, (key, meta)
    assert len(json.loads(meta["class_names"])) == expected_classes, meta["class_names"]
    ops = {node.op_type for node in model.graph.node}
    return ops


def export(args, ckpt, out, *extra):
    return subprocess.run([args.ckpt_tool, "export", ckpt, "--out", out, *extra],
                          capture_output=True, text=True)


def check_model(args, name, size, work):
    import numpy as np

    ckpt = subprocess.run([args.fixture, name, str(size), work], check=True, capture_output=True,
                          text=True).stdout.strip()
    images = os.path.join(work, name, "images.npy")
    expected = np.load(os.path.join(work, name, "logits.npy"))
    data = os.path.join(work, "data")
    for fold in ("--fold-bn", "--no-fold-bn"):
        path = os.path.join(work, f"{name}{fold}.onnx")
        done = export(args, ckpt, path, fold, "--data", data)
        assert done.returncode == 0, done.stderr
        ops = check_file(path, expected.shape[1])
        if name != "lenet":
            assert ("BatchNormalization" in ops) == (fold == "--no-fold-bn"), (fold, ops)
        got = logits_of(args.runtime, path, images, args.venv)
        diff = float(np.abs(got - expected).max()) / max(1.0, float(np.abs(expected).max()))
        same_top1 = bool((got.argmax(1) == expected.argmax(1)).all())
        print(f"{name} {fold} via {args.runtime}: {len(expected)} images, max |logit diff| "
              f"(scaled) {diff:.2e}, top-1 {'same' if same_top1 else 'DIFFERS'}")
        assert diff <= TOLERANCE and same_top1, (name, fold, diff)
    return ckpt


def check_errors(args, ckpts, work):
    """Bad inputs: exit status 2, a message naming the problem, and no output file."""
    lenet, resnet8 = ckpts["lenet"], ckpts["resnet8"]
    with open(lenet, "rb") as f:
        content = f.read()
    truncated = os.path.join(work, "lenet", "lenet_0-9_9.ckpt")
    with open(truncated, "wb") as f:
        f.write(content[: len(content) // 2])
    tampered = os.path.join(work, "lenet", "lenet_0-9_8.ckpt")
    with open(tampered, "wb") as f:
        f.write(content[:100] + bytes([content[100] ^ 0x10]) + content[101:])
    other_meta = os.path.join(os.path.dirname(resnet8), "resnet8_0-graph.meta")
    cases = [("truncated", truncated, []), ("tampered", tampered, []),
             ("another model's meta", lenet, ["--meta", other_meta])]
    for what, ckpt, extra in cases:
        out = os.path.join(work, "bad.onnx")
        done = export(args, ckpt, out, *extra)
        assert done.returncode == 2 and "error" in done.stderr, (what, done)
        assert not os.path.exists(out) and not os.path.exists(out + ".tmp"), what
        print(f"{what}: {done.stderr.strip()}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixture")
    parser.add_argument("--ckpt-tool")
    parser.add_argument("--runtime", choices=["opencv", "onnxruntime"])
    parser.add_argument("--venv")
    parser.add_argument("--ort-run", nargs=2, help="(internal) MODEL IMAGES under the venv")
    args = parser.parse_args()
    if args.ort_run:
        run_onnxruntime(*args.ort_run)
        return 0
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
        if args.runtime == "opencv":
            import cv2  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e} (apt-get install python3-onnx python3-opencv)")
        return SKIPPED
    if args.runtime == "onnxruntime" and not pypi_venv.ensure(args.venv, ORT_PACKAGES,
                                                              "onnxruntime, numpy"):
        return SKIPPED
    with tempfile.TemporaryDirectory() as work:
        ckpts = {name: check_model(args, name, size, work) for name, size in MODELS}
        check_errors(args, ckpts, work)
    print("all exports match Lockstep's evaluation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
