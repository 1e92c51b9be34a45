"""Small ImageFolder trees of real JPEG files for the tests, encoded by Lockstep's own encoder
(OpenCV cannot share a process with lockstep._core: both register a protobuf graph.proto).

Each image is one grey level, its own: sample_id() tells from a decoded image (through any crop,
resize or flip) which file it came from."""

import os

import numpy as np

from lockstep.dataset.vision import encode_jpeg


def grey_level(sample):
    """The grey level of the sample-th image written (0-based, in sorted path order)."""
    return 8 + 6 * sample


def sample_id(image):
    """Which image a decoded (H, W, 3) or (3, H, W) uint8 array came from."""
    return int(round((float(np.mean(image)) - 8) / 6))


def write_image_folder(root, classes, size=(24, 32)):
    """Writes root/<class>/<class>_<i>.jpg, classes[name] images per class, each (height, width)
    = `size`, and returns the classes' names in sorted order (the default labels). Samples are
    numbered in sorted path order, as ImageFolder lists them."""
    names = sorted(classes)
    sample = 0
    for name in names:
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for i in range(classes[name]):
            image = np.full(size + (3,), grey_level(sample), dtype=np.uint8)
            with open(os.path.join(root, name, f"{name}_{i:03d}.jpg"), "wb") as f:
                f.write(encode_jpeg(image, quality=95).tobytes())
            sample += 1
    assert grey_level(sample - 1) < 250, "too many images for distinct grey levels"
    return names
