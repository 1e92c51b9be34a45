"""Data-parallel ResNet training, written as MindSpore's GPU data-parallel recipe is: run it with
``import mindspore`` in place of ``import lockstep`` and it is that recipe.

    mpirun -n 4 python3 python/examples/train_resnet.py --data_path build/sample_data

Each rank reads its shard of DATA/train, the gradients are averaged over the ranks, every rank
saves its checkpoints, and the evaluation on DATA/val counts every image once over all ranks.
With the same settings and seed, lockstep-train trains the same model bit for bit:

    mpirun -n 4 lockstep-train --data DATA --model resnet8 --epochs 6 --batch-size 32 \\
        --lr 0.1 --ckpt-dir CKPT --save-steps 18 --save-epochs 0
"""

import argparse
import math
import os

import numpy as np

import lockstep as ms
import lockstep.dataset as ds
import lockstep.dataset.transforms as transforms
import lockstep.dataset.vision as vision
from lockstep import nn
from lockstep.communication import get_group_size, get_rank, init
from lockstep.train.callback import CheckpointConfig, LossMonitor, ModelCheckpoint, TimeMonitor


def create_dataset(dataset_path, do_train, batch_size, image_size, rank_size, rank_id):
    """The ImageFolder shard of this rank: decoded, scaled to 9/8 of the image size, cropped
    (randomly and flipped in training), normalized to [-1, 1], CHW."""
    data_set = ds.ImageFolderDataset(dataset_path, num_parallel_workers=2, shuffle=do_train,
                                     num_shards=rank_size, shard_id=rank_id)
    crop = [vision.RandomCrop(image_size), vision.RandomHorizontalFlip()] if do_train else [
        vision.CenterCrop(image_size)]
    trans = [vision.Decode(), vision.Resize(image_size * 9 // 8)] + crop + [
        vision.Normalize(mean=[127.5] * 3, std=[127.5] * 3), vision.HWC2CHW()]
    data_set = data_set.map(operations=trans, input_columns="image", num_parallel_workers=2)
    data_set = data_set.map(operations=transforms.TypeCast(ms.int32), input_columns="label")
    return data_set.batch(batch_size, drop_remainder=do_train)


def warmup_cosine_lr(base_lr, steps_per_epoch, epochs, warmup_epochs):
    """One rate per step: linear warm-up, then half a cosine down to 0."""
    total = steps_per_epoch * epochs
    warmup = int(warmup_epochs * steps_per_epoch)
    cosine = max(total - warmup, 1)

    def after(step):
        progress = min(1.0, step / cosine)
        return 0.5 * base_lr * (1.0 + math.cos(math.pi * progress))

    return np.array([after(0) * (s + 1) / warmup if s < warmup else after(s - warmup)
                     for s in range(total)], dtype=np.float64)


def main():
    parser = argparse.ArgumentParser(description="ResNet data-parallel training")
    parser.add_argument("--data_path", required=True, help="ImageFolder root with train/, val/")
    parser.add_argument("--ckpt_path", default="ckpt")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch_size", type=int, default=32, help="global, over all ranks")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--device_target", default="CPU", choices=["CPU", "GPU"])
    args = parser.parse_args()

    ms.set_context(mode=ms.GRAPH_MODE, device_target=args.device_target)
    init()
    rank_id, rank_size = get_rank(), get_group_size()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL,
                                 gradients_mean=True, device_num=rank_size)
    ms.set_seed(0)

    train_set = create_dataset(os.path.join(args.data_path, "train"), True,
                               args.batch_size // rank_size, 32, rank_size, rank_id)
    steps_per_epoch = train_set.get_dataset_size()
    net = ms.models.cifar_resnet(8, class_num=train_set.num_classes())
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    lr = warmup_cosine_lr(args.lr, steps_per_epoch, args.epochs, warmup_epochs=1)
    opt = nn.Momentum(net.trainable_params(), lr, momentum=0.9, weight_decay=1e-4,
                      loss_scale=1024)
    scale = ms.FixedLossScaleManager(1024, drop_overflow_update=False)
    model = ms.Model(net, loss_fn=loss, optimizer=opt, metrics={"accuracy"},
                     loss_scale_manager=scale)

    config = CheckpointConfig(save_checkpoint_steps=steps_per_epoch, keep_checkpoint_max=3)
    checkpoint = ModelCheckpoint(prefix="resnet8", directory=args.ckpt_path, config=config)
    callbacks = [checkpoint, TimeMonitor()] + ([LossMonitor(20)] if rank_id == 0 else [])
    model.train(args.epochs, train_set, callbacks=callbacks, dataset_sink_mode=False)

    val_set = create_dataset(os.path.join(args.data_path, "val"), False,
                             args.batch_size // rank_size, 32, rank_size, rank_id)
    accuracy = model.eval(val_set)["accuracy"]
    if rank_id == 0:
        print(f"validation accuracy {accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
