"""Lockstep against PyTorch, one training step each in turn.

On a shared machine the speed drifts by 10-20% over seconds, so two programs timed one after
the other can meet different machines. This driver runs `lockstep-bench-resnet --paced` as a
child and PyTorch in its own process, and alternates: one Lockstep step, then one torch step,
each timed by its own program while the other waits. It prints the median of each and the
median of the per-pair ratios. The torch side is ../shared/peers/torch_resnet_step.py's recipe
(torchvision model, 10 classes, SGD momentum 0.9, lr 0.01, cross-entropy, one random batch), in
the peer's precision and layout: fp32 or bf16 (torch.autocast around forward and loss, float32
weights) on NCHW or channels_last, against Lockstep at --amp-level/--amp-dtype.

Usage: python3 bench/paced_vs_torch.py BENCH_BINARY [--model resnet18] [--size 224]
           [--batch 8] [--threads 2] [--steps 20] [--warmup 2]
           [--amp-level O2 --amp-dtype bf16] [--torch-precision bf16 --torch-layout nhwc]
"""
import argparse
import statistics
import subprocess
import time

import torch
import torchvision


def torch_step_fn(arch, size, batch, precision, layout):
    torch.manual_seed(0)
    memory_format = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    model = getattr(torchvision.models, arch)(num_classes=10).to(memory_format=memory_format)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, size, size).to(memory_format=memory_format)
    y = torch.randint(0, 10, (batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return time.perf_counter() - start

    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bench")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--amp-level", default="O0", choices=["O0", "O1", "O2", "O3"])
    parser.add_argument("--amp-dtype", default="bf16", choices=["bf16", "fp16"])
    parser.add_argument("--torch-precision", default="fp32", choices=["fp32", "bf16"])
    parser.add_argument("--torch-layout", default="nchw", choices=["nchw", "nhwc"])
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch_step = torch_step_fn(args.model, args.size, args.batch, args.torch_precision,
                               args.torch_layout)
    lockstep = subprocess.Popen(
        [args.bench, "--paced", "--model", args.model, "--size", str(args.size),
         "--batch", str(args.batch), "--threads", str(args.threads),
         "--steps", str(args.steps), "--warmup", str(args.warmup),
         "--amp-level", args.amp_level, "--amp-dtype", args.amp_dtype],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def lockstep_step():
        lockstep.stdin.write("go\n")
        lockstep.stdin.flush()
        line = lockstep.stdout.readline()
        if not line.startswith("step_s="):
            raise RuntimeError(f"{args.bench} answered {line!r} instead of a step time")
        return float(line.split("=", 1)[1])

    ours, theirs = [], []
    for i in range(args.warmup + args.steps):
        a = lockstep_step()
        b = torch_step()
        if i >= args.warmup:
            ours.append(a)
            theirs.append(b)
    lockstep.stdin.close()
    lockstep.wait()
    for a, b in zip(ours, theirs):
        print(f"  lockstep {a:.4f}  torch {b:.4f}  ratio {a / b:.3f}")
    ratios = sorted(a / b for a, b in zip(ours, theirs))
    print(f"paced {args.model} size={args.size} batch={args.batch} threads={args.threads} "
          f"lockstep={args.amp_level}/{args.amp_dtype} "
          f"torch {torch.__version__}={args.torch_precision}/{args.torch_layout} "
          f"pairs={args.steps} lockstep_median_s={statistics.median(ours):.4f} "
          f"torch_median_s={statistics.median(theirs):.4f} "
          f"median_pair_ratio={statistics.median(ratios):.3f} "
          f"quartiles=[{ratios[len(ratios) // 4]:.3f}, {ratios[(3 * len(ratios)) // 4]:.3f}]")


if __name__ == "__main__":
    main()
