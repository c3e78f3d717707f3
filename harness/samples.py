"""A benchmark set as every task sees it — its samples (a file, its label and flags), the dataset they
form, and how one file becomes one input tensor — shared by the image datasets (harness/eval) and the
keyword datasets (harness/audio)."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.defaults import DEMO as DEMO  # the dataset spec of each task's demo set
from harness.tensors import TensorSpec


@dataclass(frozen=True)
class Sample:
    id: str
    image_path: Path
    flags: dict[str, int]
    split: str = "test"

    @property
    def person(self) -> int:
        return self.flags["person"]

    @property
    def label(self) -> int:
        """The class: person (1, 0, -1) for Wake Vision, the class index for keyword datasets."""
        return self.flags["label"] if "label" in self.flags else self.flags["person"]


@dataclass(frozen=True)
class CleanLabels:
    """Published cleaned labels put over a flag CSV's person column (harness/eval/label_files.py)."""

    files: tuple[str, ...]
    sha256: str
    changed: int  # rows whose person label the clean files changed
    depictions: int  # rows the clean files call a verified depiction (-2): non-person
    excluded: int  # rows the clean files exclude (-1): left out of the dataset
    not_listed: int  # flag rows the clean files do not list: they keep the flag CSV's label


@dataclass(frozen=True)
class Dataset:
    name: str
    csv_path: Path
    csv_sha256: str
    samples: tuple[Sample, ...]
    splits: tuple[str, ...] = ("test",)
    clean_labels: CleanLabels | None = None
    # False: the folder holds part of each negative pool and the whole pools' sizes are unknown (hf: without
    # --pools), so no F1 is given over it.
    whole_pools: bool = True
    # A made-up set (the demo sets): what it is instead of real data, e.g. "synthetic images, not Wake Vision".
    # Every view of its figures says so (summary.json's `synthetic`); None: real data.
    synthetic: str | None = None


@dataclass(frozen=True)
class Preparation:
    """How one file becomes one input tensor; `key` names everything the result depends on."""

    key: str
    spec: TensorSpec
    tensor_of: Callable[[Sample], np.ndarray]
