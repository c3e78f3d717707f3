"""Dataset sources: the published Wake Vision layout (CSVs per split, images in .tar.gz shards)."""

import csv
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from harness.errors import UserError
from harness.eval.dataset import load_dataset


@pytest.fixture
def published(tmp_path):
    """Demo images repackaged as Wake Vision publishes its data: two split CSVs and tar.gz shards."""
    demo = load_dataset("demo")
    with open(demo.csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    root = tmp_path / "wake_vision"
    root.mkdir()
    splits = {"test": rows[::2][:30], "validation": rows[1::2][:20]}
    for split, chosen in splits.items():
        with open(root / f"wake_vision_{split}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(chosen)
    everything = [r["filename"] for r in splits["test"] + splits["validation"]]
    for shard, names in enumerate((everything[:25], everything[25:])):
        with tarfile.open(root / f"wake_vision_test_{shard:02d}.tar.gz", "w:gz") as archive:
            for name in names:
                data = (demo.csv_path.parent / "images" / name).read_bytes()
                info = tarfile.TarInfo(f"wake_vision/{name}")
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return root


def test_published_layout_reads_splits_and_extracts_images_from_shards(published):
    test = load_dataset(str(published))
    assert test.splits == ("test",) and len(test.samples) == 30
    assert all(s.image_path.is_file() for s in test.samples)
    both = load_dataset(str(published), ["test", "validation"])
    assert len(both.samples) == 50 and {s.split for s in both.samples} == {"test", "validation"}
    with pytest.raises(UserError, match="unknown split train"):
        load_dataset(str(published), ["train"])


def test_eval_on_the_validation_split(tmp_path, published, small_model):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "eval",
            "--model",
            "wv_quality_k_2_c_3",
            "--dataset",
            str(published),
            "--split",
            "validation",
            "--subset",
            "validation",
            "--json",
            "--results",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["subsets"]["validation"]["n"] == 20 == summary["samples"]
    assert summary["subsets"]["validation"]["device"]["accuracy_ci95"] is not None


def test_datasets_lists_the_sources():
    done = subprocess.run(
        [sys.executable, "-m", "harness", "datasets", "--json"], capture_output=True, text=True, env=os.environ.copy()
    )
    names = [source["name"] for source in json.loads(done.stdout)]
    assert names[0] == "demo" and len(names) == 3
