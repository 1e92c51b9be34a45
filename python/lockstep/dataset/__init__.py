"""lockstep.dataset: ImageFolder data sets and their transforms, as mindspore.dataset.

Python describes the pipeline and reads its batches; Lockstep's C++ pipeline loads, decodes and
transforms the images in its own worker threads, without Python."""

from lockstep.dataset import transforms, vision
from lockstep.dataset.datasets import Dataset, ImageFolderDataset

__all__ = ["Dataset", "ImageFolderDataset", "transforms", "vision"]
