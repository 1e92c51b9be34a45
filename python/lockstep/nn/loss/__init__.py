"""nn.SoftmaxCrossEntropyWithLogits: the loss Lockstep's graphs compute (train/loss.h)."""

from lockstep.nn.cell import Cell


class SoftmaxCrossEntropyWithLogits(Cell):
    """Mean softmax cross-entropy of logits (N, classes) against int32 labels (N).

    MindSpore's defaults (sparse=False, reduction='none') take one-hot labels and give a loss
    per sample; the graph takes class indices and trains on their mean, so a script says
    sparse=True, reduction='mean', as MindSpore's classification recipes do."""

    def __init__(self, sparse=False, reduction="none"):
        super().__init__()
        if not sparse or reduction != "mean":
            raise ValueError(
                f"SoftmaxCrossEntropyWithLogits(sparse={sparse}, reduction={reduction!r}): "
                "Lockstep trains on class-index labels and the mean loss: write sparse=True, "
                "reduction='mean'")
        self.sparse, self.reduction = sparse, reduction
