"""Initial values a script gives a layer (weight_init=...): a Tensor or array, loaded into the
Model when it compiles. Named initializers other than the layer's own are refused, so that no
script trains from an initialization it did not ask for."""

import numpy as np

from lockstep.common.tensor import Tensor


def initial_values(init, what, own=(None,)):
    """The values `init` gives, or None to keep the layer's initializer (`own` names it)."""
    if init in own:
        return None
    if isinstance(init, Tensor):
        return init.asnumpy()
    if isinstance(init, np.ndarray):
        return init
    accepted = ", ".join(repr(o) for o in own)
    raise ValueError(f"{what}={init!r}: Lockstep initializes this parameter its own way "
                     f"(train/layers.h); give {accepted} or the values as a Tensor")
