import csv

import numpy as np
from PIL import Image

from harness.eval.dataset import load_dataset
from harness.eval.demo_dataset import COLUMNS
from harness.eval.preprocess import luma
from harness.eval.sampling import select_samples
from harness.eval.subsets import SUBSETS


def test_demo_set_has_the_wake_vision_columns_and_every_subset():
    dataset = load_dataset("demo")
    with open(dataset.csv_path, newline="") as f:
        assert tuple(csv.DictReader(f).fieldnames) == COLUMNS
    assert "demo" in dataset.name
    for name, subset in SUBSETS.items():
        if subset.split is None or subset.split in dataset.splits:  # the demo set is one split, test
            assert select_samples(dataset.samples, [subset]), f"subset {name} is empty"
    assert len(select_samples(dataset.samples, [SUBSETS["distance_far"]])) >= 20


def test_demo_flags_agree_with_the_pixels():
    dataset = load_dataset("demo")
    for sample in dataset.samples[::7]:
        grey = luma(np.asarray(Image.open(sample.image_path).convert("RGB"), dtype=np.float32)).mean()
        lighting = "dark" if grey < 85 else ("normal_lighting" if grey < 170 else "bright")
        assert sample.flags[lighting] == 1
        assert sum(sample.flags[k] for k in ("dark", "normal_lighting", "bright")) == 1
        if sample.person == 1:
            assert sum(sample.flags[k] for k in ("near", "medium_distance", "far")) == 1
        else:
            assert sum(sample.flags[k] for k in ("near", "medium_distance", "far")) == 0
            assert sample.flags["depiction"] == sample.flags["person_depiction"] + sample.flags["non-person_depiction"]


def test_demo_build_is_deterministic(tmp_path):
    from harness.eval.demo_dataset import build_demo_dataset

    first = build_demo_dataset(tmp_path / "a")
    second = build_demo_dataset(tmp_path / "b")
    assert (first / "labels.csv").read_bytes() == (second / "labels.csv").read_bytes()
    assert (first / "images" / "demo_0005.jpg").read_bytes() == (second / "images" / "demo_0005.jpg").read_bytes()
    assert not list(tmp_path.glob("*.partial"))
