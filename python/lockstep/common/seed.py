"""The global seed: parameter initialization, shuffling and random transforms derive from it."""

_seed = None


def set_seed(seed):
    """As mindspore.set_seed: every rank that sets the same seed starts from the same model."""
    global _seed
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"set_seed: seed must be a non-negative int, got {seed!r}")
    _seed = seed


def get_seed():
    """The seed set_seed set, or None."""
    return _seed
