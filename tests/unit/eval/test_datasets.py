"""Dataset sources: the published Wake Vision layout (CSVs per split, images in .tar.gz shards)."""

import csv
import io
import json
import os
import sys
import tarfile

import pytest

from harness.errors import UserError
from harness.eval.dataset import load_dataset
from tests.forked_cli import run_harness_command


def _harness(*args):
    return run_harness_command([*args], env=os.environ.copy())


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


def test_an_extracted_image_that_changed_is_extracted_again_from_its_shard(published, capsys):
    image = load_dataset(str(published)).samples[0].image_path
    original = image.read_bytes()
    damaged = bytearray(original)
    damaged[len(damaged) // 2] ^= 0x01
    image.write_bytes(bytes(damaged))
    capsys.readouterr()
    load_dataset(str(published))
    assert "was damaged (checksum); rebuilding it" in capsys.readouterr().err
    assert image.read_bytes() == original


def test_eval_on_the_validation_split(tmp_path, published, small_model):
    done = _harness(
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
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["subsets"]["validation"]["n"] == 20 == summary["samples"]
    assert summary["subsets"]["validation"]["device"]["accuracy_ci95"] is not None


@pytest.mark.slow
def test_datasets_lists_the_sources():
    done = _harness("dataset", "list", "--json")
    sources = json.loads(done.stdout)
    names = [source["name"] for source in sources]
    assert names[0] == "demo" and names[3] == "hf:Harvard-Edge/Wake-Vision" and len(names) == 6
    assert all("keyword" in source["kind"] for source in sources[4:])


@pytest.mark.slow
def test_dataset_build_labels_images_from_open_images_style_boxes(tmp_path, small_model):
    from PIL import Image

    images, annotations = tmp_path / "images", tmp_path / "annotations"
    images.mkdir()
    annotations.mkdir()
    for name, size, grey in [
        ("near", (200, 100), 200),
        ("far", (100, 100), 40),
        ("drawn", (100, 100), 120),
        ("statue", (100, 100), 120),
        ("street", (100, 100), 120),
        ("face", (100, 100), 120),
    ]:
        Image.new("RGB", size, (grey, grey, grey)).save(images / f"{name}.jpg", quality=100)
    (annotations / "class-descriptions-boxable.csv").write_text(
        "/m/01g317,Person\n/m/04yx4,Man\n/m/0dzct,Human face\n/m/01yrx,Cat\n/m/0k4j,Car\n"
    )
    header = (
        "ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepiction,"
        "IsInside\n"
    )
    boxes = [
        "near,x,/m/01g317,1,0.25,0.75,0.0,1.0,0,0,0,0,0",
        "far,x,/m/04yx4,1,0.0,0.2,0.0,0.2,0,0,0,0,0",
        "far,x,/m/01g317,1,0.5,0.9,0.1,0.9,0,0,0,1,0",
        "drawn,x,/m/01g317,1,0.1,0.9,0.1,0.9,0,0,0,1,0",
        "statue,x,/m/01yrx,1,0.1,0.9,0.1,0.9,0,0,0,1,0",
        "street,x,/m/0k4j,1,0.1,0.9,0.1,0.9,0,0,0,0,0",
        "face,x,/m/0dzct,1,0.3,0.7,0.3,0.7,0,0,0,0,0",
    ]
    (annotations / "train-annotations-bbox.csv").write_text(header + "\n".join(boxes) + "\n")
    (annotations / "open_images_extended_miap_boxes_train.csv").write_text(
        "ImageID,LabelName,GenderPresentation,AgePresentation\n"
        "near,/m/01g317,Predominantly Feminine,Young\nnear,/m/01g317,Predominantly Feminine,Middle\n"
    )
    out = tmp_path / "built"
    done = _harness("dataset", "build", "--annotations", str(annotations), "--images", str(images), "--out", str(out))
    assert done.returncode == 0, done.stderr
    with open(out / "labels.csv", newline="") as f:
        rows = {
            r["filename"].split(".")[0]: {k: int(v) for k, v in r.items() if k != "filename"} for r in csv.DictReader(f)
        }

    def on(name):
        return {k for k, v in rows[name].items() if v == 1}

    assert on("near") == {"person", "near", "bright", "predominantly_female"}  # ages differ: no age flag
    assert on("far") == {"person", "depiction", "far", "dark"}
    assert on("drawn") == {"depiction", "person_depiction", "normal_lighting"}
    assert on("statue") == {"depiction", "non-person_depiction", "normal_lighting"}
    assert on("street") == {"non-person_non-depiction", "normal_lighting"}
    assert on("face") == {"person", "body_part", "medium_distance", "normal_lighting"}
    evaluated = _harness(
        "eval", "--model", "wv_quality_k_2_c_3", "--dataset", str(out), "--json", "--results", str(tmp_path / "results")
    )
    assert evaluated.returncode == 0 and json.loads(evaluated.stdout)["samples"] == 6


class _HubSplit:
    """A stand-in for a streamed split of the hub (`datasets.IterableDataset`): rows made from `kinds` (0: a
    far person, 1: a non-person in the dark, 2: a near person), counted as read, and `.shuffle` as the hub has it."""

    def __init__(self, split, kinds, read):
        self.split, self.kinds, self.read = split, kinds, read

    def shuffle(self, seed, buffer_size):
        import random

        kinds = list(self.kinds)
        random.Random(seed).shuffle(kinds)
        return _HubSplit(self.split, kinds, self.read)

    def __iter__(self):
        from PIL import Image

        from harness.eval.demo_dataset import COLUMNS

        for i, kind in self.kinds:
            flags = dict.fromkeys(COLUMNS[1:], 0) | {"person": int(kind != 1), "far": int(kind == 0)}
            flags |= {"near": int(kind == 2), "dark": int(kind == 1)}
            self.read[self.split] += 1
            yield {"filename": f"{self.split}_{i}.jpg", "image": Image.new("RGB", (8, 8)), **flags}


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The hub is unreachable here: a stand-in `datasets` package streams `hub.kinds` per split."""
    import types

    hub = types.SimpleNamespace(kinds=[i % 3 for i in range(30)], read={"test": 0, "validation": 0})

    def load(repo, split, streaming):
        return _HubSplit(split, list(enumerate(hub.kinds)), hub.read)

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    return hub


HF = "hf:Harvard-Edge/Wake-Vision"


def test_hub_streaming_brings_every_member_and_the_pools_of_every_split(hub):
    from harness.eval.hf_source import stream_to_folder
    from harness.eval.metrics import pool_of
    from harness.eval.subsets import SUBSETS

    far = SUBSETS["distance_far"]
    folder = stream_to_folder(HF, ["test", "validation"], [far], limit=2)
    dataset = load_dataset(str(folder), ["test", "validation"])
    assert dataset.splits == ("test", "validation") and hub.read == {"test": 30, "validation": 30}
    for split in ("test", "validation"):
        kept = [s for s in dataset.samples if s.split == split]
        # every member (the run draws --limit of them), and the whole pool
        assert [s.id for s in kept if far.contains(s)] == [f"{split}_{i}.jpg" for i in range(0, 30, 3)]
        assert [s.id for s in kept if not far.contains(s)] == [f"{split}_{i}.jpg" for i in range(1, 30, 3)]
    assert pool_of(far, dataset) == 20 and all(s.image_path.is_file() for s in dataset.samples)
    hub.read.update(test=0, validation=0)  # without pools (harness perf: one timed input), it stops at the members
    stream_to_folder(HF, ["validation"], [far], limit=2, pools=False)
    assert 2 <= hub.read["validation"] < 30
    with pytest.raises(UserError, match="unknown split train"):
        stream_to_folder(HF, ["train"], [SUBSETS["all"]], None)


def test_hub_limit_with_pools_is_drawn_stratified_from_the_whole_subset(hub):
    """Persons first in the stream: the first six members would be persons only. (The run adds `all`'s
    pool, its non-persons, whole; the members drawn are what --limit chooses.)"""
    from harness.eval.hf_source import stream_to_folder
    from harness.eval.sampling import SAMPLED, select
    from harness.eval.subsets import SUBSETS

    hub.kinds = [2] * 20 + [1] * 10
    every = SUBSETS["all"]
    dataset = load_dataset(str(stream_to_folder(HF, ["test"], [every], limit=6)))
    drawn = [select(dataset.samples, [every], 6, SAMPLED, seed, pools=False).samples for seed in (1, 2)]
    assert [sorted(s.person for s in d) for d in drawn] == [[0, 0, 1, 1, 1, 1]] * 2
    assert {s.id for s in drawn[0]} != {s.id for s in drawn[1]}


def test_hub_limit_without_pools_is_a_seeded_sample_and_gives_no_f1(hub, tmp_path):
    from harness.eval.hf_source import stream_to_folder
    from harness.eval.metrics import UNKNOWN_POOL
    from harness.eval.score_file import score_file
    from harness.eval.subsets import SUBSETS

    far = SUBSETS["distance_far"]

    def members(seed):
        folder = stream_to_folder(HF, ["test"], [far], limit=3, pools=False, seed=seed)
        return folder, [s.id for s in load_dataset(str(folder)).samples if far.contains(s)]

    (folder, one), (_, two) = members(1), members(2)
    assert len(one) == len(two) == 3 and one != two and members(1)[1] == one
    assert set(one) != {"test_0.jpg", "test_3.jpg", "test_6.jpg"}  # not the stream's first three
    predictions = tmp_path / "predictions.csv"
    dataset = load_dataset(str(folder))
    predictions.write_text("filename,prediction\n" + "".join(f"{s.id},1\n" for s in dataset.samples))
    scored = score_file(dataset, predictions, [far])["subsets"]["distance_far"]
    assert scored["f1_wv"] is None and scored["f1_counts"] is None and scored["f1_unavailable"] == UNKNOWN_POOL
    assert scored["pool_size"] is None and scored["accuracy"] == 1.0


def _labels_folder(tmp_path, lines: list[bytes]):
    """A labels.csv folder holding the demo header and the given rows."""
    demo = load_dataset("demo")
    header = demo.csv_path.read_bytes().splitlines()[0]
    root = tmp_path / "labels_folder"
    (root / "images").mkdir(parents=True)
    (root / "labels.csv").write_bytes(b"\n".join([header, *lines]) + b"\n")
    return root, demo.csv_path.read_bytes().splitlines()[1:]


def test_a_short_row_in_labels_csv_is_named_by_file_and_line(tmp_path):
    _, rows = _labels_folder(tmp_path, [])
    root, _ = _labels_folder(tmp_path / "t", [rows[0], b"demo_0003.jpg,1"])
    with pytest.raises(UserError, match=r"labels\.csv line 3: 2 fields where the header has 20"):
        load_dataset(str(root))
    done = _harness("eval", "--dataset", str(root), "--limit", "2", "--results", str(tmp_path / "res"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "line 3" in done.stderr, done.stderr


def test_a_file_listed_twice_in_labels_csv_is_refused(tmp_path):
    _, rows = _labels_folder(tmp_path, [])
    twice = rows[0].replace(b"demo_0000.jpg", b"demo_0001.jpg")
    root, _ = _labels_folder(tmp_path / "t", [rows[1], rows[2], twice])
    with pytest.raises(UserError, match=r"line 4: demo_0001\.jpg is listed again \(first on line 2\)"):
        load_dataset(str(root))


def test_a_labels_csv_that_is_not_utf8_is_named_as_such(tmp_path):
    _, rows = _labels_folder(tmp_path, [])
    root, _ = _labels_folder(tmp_path / "t", [rows[0], b"\xff\xfe" + rows[1]])
    with pytest.raises(UserError, match=r"labels\.csv is not UTF-8 text \(byte 0xff at offset"):
        load_dataset(str(root))


def test_an_eval_streamed_without_pools_gives_no_f1_and_says_why(hub, tmp_path, small_model, capsys):
    """The dark non-persons streamed for lighting_dark are part of distance_far's pool, not the pool."""
    from harness.cli import main
    from harness.eval.metrics import UNKNOWN_POOL

    common = ["eval", "--model", "wv_quality_k_2_c_3", "--dataset", HF, "--subset", "distance_far,lighting_dark"]
    assert main([*common, "--limit", "3", "--json", "--results", str(tmp_path / "results")]) == 0
    far = json.loads(capsys.readouterr().out)["subsets"]["distance_far"]
    assert far["n"] == 3 and far["device"]["f1_wv"] is None and far["device"]["f1_unavailable"] == UNKNOWN_POOL


def test_a_streamed_folder_whose_labels_were_cut_short_is_streamed_again(hub, capsys):
    from harness.eval.hf_source import stream_to_folder
    from harness.eval.subsets import SUBSETS

    folder = stream_to_folder(HF, ["test"], [SUBSETS["distance_far"]], limit=2)
    labels = folder / "wake_vision_test.csv"
    whole = labels.read_text()
    labels.write_text("".join(whole.splitlines(keepends=True)[:3]))
    hub.read.update(test=0)
    assert stream_to_folder(HF, ["test"], [SUBSETS["distance_far"]], limit=2) == folder
    assert "was damaged (checksum); rebuilding it" in capsys.readouterr().err
    assert labels.read_text() == whole and hub.read["test"] == 30
