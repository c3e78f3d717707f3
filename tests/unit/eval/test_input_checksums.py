"""Checksums of what the cache holds: an input cache entry or the demo set whose files changed on disk (flipped
bits, labels cut short) is noticed when first opened, said in one line, and built again."""

import numpy as np
import pytest

from harness.eval import dataset as dataset_module
from harness.eval.dataset import load_dataset
from harness.eval.demo_dataset import CHECKSUMS, RECIPE_VERSION
from harness.eval.input_cache import EntryWriter, _checked, open_entry, read_index, tensors_dir
from harness.paths import cache_dir

KEY = "c" * 24
NOTICE = "was damaged (checksum); rebuilding it"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    _checked.clear()


def _entry(rows: np.ndarray) -> None:
    writer = EntryWriter(KEY, rows.dtype, rows.shape[1:])
    writer.append(rows)
    writer.finish([str(i) for i in range(len(rows))], [])


def _flip_a_bit(path, offset: int = 5) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


def test_an_intact_entry_is_read_back():
    rows = np.arange(24, dtype=np.float32).reshape(3, 2, 4)
    _entry(rows)
    assert np.array_equal(np.stack(list(open_entry(KEY))), rows)


def test_an_entry_with_a_flipped_bit_is_dropped_with_a_notice(capsys):
    _entry(np.arange(24, dtype=np.float32).reshape(3, 2, 4))
    _flip_a_bit(tensors_dir() / f"{KEY}.bin")
    assert open_entry(KEY) is None
    assert f"harness: cache entry {KEY} {NOTICE}" in capsys.readouterr().err
    assert not (tensors_dir() / f"{KEY}.bin").exists() and not (tensors_dir() / f"{KEY}.json").exists()


def test_the_checksum_follows_a_widened_entry():
    writer = EntryWriter(KEY, np.float32, (2,))
    writer.append(np.array([[1, 2]], np.float32))  # uint8 on disk
    writer.append(np.array([[-300, 0.5]], np.float32))  # float32 on disk: the rows so far are rewritten
    writer.finish(["a", "b"], [])
    assert open_entry(KEY) is not None


def test_an_entry_is_checked_once_a_process(monkeypatch):
    from harness.eval import input_cache

    _entry(np.ones((2, 3), np.uint8))
    calls = []
    real = input_cache.file_checksum
    monkeypatch.setattr(input_cache, "file_checksum", lambda path: calls.append(path) or real(path))
    open_entry(KEY)
    open_entry(KEY)
    assert len(calls) == 1


@pytest.mark.parametrize("index", [b"\xff\xfe not json", b"[" * 10000 + b"]" * 10000, b"[1, 2]", b'{"format": 3}'])
def test_a_damaged_index_is_no_entry(index):
    _entry(np.ones((2, 3), np.uint8))
    (tensors_dir() / f"{KEY}.json").write_bytes(index)
    assert read_index(tensors_dir() / f"{KEY}.json") is None
    assert open_entry(KEY) is None


def _demo_root():
    return cache_dir() / "datasets" / RECIPE_VERSION


def test_the_demo_set_cut_to_10_rows_is_built_again_with_a_notice(capsys, monkeypatch):
    monkeypatch.setattr(dataset_module, "_checked_demo", set())
    whole = load_dataset("demo")
    labels = _demo_root() / "labels.csv"
    labels.write_text("".join(labels.read_text().splitlines(keepends=True)[:11]))
    monkeypatch.setattr(dataset_module, "_checked_demo", set())  # a new process
    capsys.readouterr()
    again = load_dataset("demo")
    assert NOTICE in capsys.readouterr().err
    assert len(again.samples) == len(whole.samples) > 10


def test_a_demo_image_with_a_flipped_bit_is_built_again(capsys, monkeypatch):
    monkeypatch.setattr(dataset_module, "_checked_demo", set())
    first = load_dataset("demo")
    image = first.samples[0].image_path
    original = image.read_bytes()
    _flip_a_bit(image, offset=len(original) // 2)
    monkeypatch.setattr(dataset_module, "_checked_demo", set())
    capsys.readouterr()
    load_dataset("demo")
    assert NOTICE in capsys.readouterr().err
    assert image.read_bytes() == original


def test_a_demo_set_built_before_checksums_is_built_again_silently(capsys, monkeypatch):
    monkeypatch.setattr(dataset_module, "_checked_demo", set())
    load_dataset("demo")
    (_demo_root() / CHECKSUMS).unlink()
    monkeypatch.setattr(dataset_module, "_checked_demo", set())
    capsys.readouterr()
    load_dataset("demo")
    assert NOTICE not in capsys.readouterr().err
    assert (_demo_root() / CHECKSUMS).is_file()


def test_prepared_inputs_with_flipped_bits_are_decoded_again_not_reused(tmp_path, capsys):
    from PIL import Image

    from harness.eval.inputs import image_preparation, prepare_inputs
    from harness.model.card import Preprocessing
    from harness.samples import Dataset, Sample
    from harness.tensors import TensorSpec

    samples = []
    for i in range(3):
        Image.new("RGB", (8, 8), (60 * i, 9, 200)).save(tmp_path / f"{i}.png")
        samples.append(Sample(str(i), tmp_path / f"{i}.png", {"person": 0}))
    dataset = Dataset("few", tmp_path / "labels.csv", "0" * 64, tuple(samples))
    pre = Preprocessing("resize_whole", (8, 8), "rgb", "bilinear", "none", "raw", "uint8")
    preparation = image_preparation(pre, TensorSpec(3, (1, 8, 8, 3), 0.0, 0, 8 * 8 * 3))
    first = prepare_inputs(dataset, samples, preparation)
    expected = np.stack(list(first.tensors))
    _flip_a_bit(tensors_dir() / f"{first.key}.bin", offset=200)
    _checked.clear()  # a new process
    again = prepare_inputs(dataset, samples, preparation)
    assert not again.from_cache and NOTICE in capsys.readouterr().err
    assert np.array_equal(np.stack(list(again.tensors)), expected)


def test_an_image_that_is_a_fifo_is_unreadable_not_a_hang(tmp_path):
    import os

    from PIL import Image

    from harness.errors import UserError
    from harness.eval.inputs import image_preparation, prepare_inputs
    from harness.model.card import Preprocessing
    from harness.samples import Dataset, Sample
    from harness.tensors import TensorSpec

    Image.new("RGB", (8, 8), (10, 20, 30)).save(tmp_path / "good.png")
    os.mkfifo(tmp_path / "fifo.png")
    samples = [
        Sample("fifo.png", tmp_path / "fifo.png", {"person": 1}),
        Sample("good.png", tmp_path / "good.png", {"person": 0}),
    ]
    dataset = Dataset("few", tmp_path / "labels.csv", "1" * 64, tuple(samples))
    pre = Preprocessing("resize_whole", (8, 8), "rgb", "bilinear", "none", "raw", "uint8")
    preparation = image_preparation(pre, TensorSpec(3, (1, 8, 8, 3), 0.0, 0, 8 * 8 * 3))
    inputs = prepare_inputs(dataset, samples, preparation)
    assert [s.id for s in inputs.samples] == ["good.png"]
    assert inputs.unreadable[0][0] == "fifo.png" and "is a FIFO" in inputs.unreadable[0][1]
    with pytest.raises(UserError, match=r"1 files could not be read \(first: fifo\.png: image .* is a FIFO"):
        prepare_inputs(dataset, samples, preparation, strict=True)
