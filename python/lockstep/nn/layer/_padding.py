"""MindSpore's pad_mode for convolutions and pooling, as the symmetric padding Lockstep's ops
take."""


def _pair(value, what):
    if isinstance(value, int):
        return value, value
    if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] == value[1]:
        return value[0], value[1]
    raise ValueError(f"{what} must be an int or two equal ints, got {value!r}")


def square(value, what):
    """One int for a square kernel, stride or dilation."""
    return _pair(value, what)[0]


def symmetric_padding(pad_mode, padding, kernel, stride, dilation, layer):
    """The padding on every side that pad_mode asks for.

    'same' pads (kernel - 1) * dilation in total, split evenly when the split is exact for every
    input size, i.e. at stride 1 with an odd (dilated) kernel; MindSpore pads the odd pixel after
    otherwise, which Lockstep's symmetric padding cannot, so that is an error with what to write
    instead."""
    mode = pad_mode.lower()
    if mode == "valid":
        if padding not in (0, (0, 0), (0, 0, 0, 0)):
            raise ValueError(f"{layer}: padding={padding!r} needs pad_mode='pad'")
        return 0
    if mode == "pad":
        if isinstance(padding, (tuple, list)) and len(padding) == 4:
            if len(set(padding)) != 1:
                raise ValueError(f"{layer}: padding={padding!r} is asymmetric; Lockstep pads "
                                 "every side alike")
            return padding[0]
        return _pair(padding, f"{layer}: padding")[0]
    if mode == "same":
        total = (kernel - 1) * dilation
        if stride == 1 and total % 2 == 0:
            return total // 2
        raise ValueError(
            f"{layer}: pad_mode='same' with kernel {kernel} and stride {stride} pads the odd "
            "pixel after the image, which Lockstep's symmetric padding cannot; write "
            f"pad_mode='pad', padding={total // 2 if total % 2 == 0 else (total + 1) // 2} (the "
            "same output size, windows shifted by at most one pixel)")
    raise ValueError(f"{layer}: pad_mode must be 'same', 'valid' or 'pad', got {pad_mode!r}")
