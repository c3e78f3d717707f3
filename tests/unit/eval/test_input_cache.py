"""The input cache: each entry in its smallest exact form, read back as the tensor's dtype; listing and pruning."""

import os
import time

import numpy as np
import pytest
from PIL import Image

from harness.eval.input_cache import EntryWriter, list_entries, narrowest_exact, open_entry, prune, tensors_dir
from harness.eval.inputs import as_the_model_quantizes, image_preparation, prepare_inputs
from harness.model.card import Preprocessing
from harness.samples import Dataset, Preparation, Sample
from harness.tensors import TensorSpec, affine_quantize


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize(
    ("values", "dtype", "narrowest"),
    [
        ([0.0, 17.0, 255.0], np.float32, np.uint8),
        ([-128.0, 0.0, 127.0], np.float32, np.int8),
        ([0.0, 300.0], np.float32, np.uint16),
        ([-1.0, 300.0], np.float32, np.int16),
        ([0.5, 1024.0], np.float32, np.float16),
        ([0.1, 200.0], np.float32, np.float32),
        ([float("nan"), 1.0], np.float32, np.float32),
        ([-3, 100], np.int8, np.int8),
        ([3, 100], np.int8, np.int8),  # an int8 tensor stays int8
    ],
)
def test_the_narrowest_form_holds_every_value_exactly(values, dtype, narrowest):
    assert narrowest_exact(np.array(values, dtype)) == np.dtype(narrowest)


def test_a_block_that_needs_a_wider_form_widens_the_rows_written_before_it():
    shape = (1, 2, 2)
    first = np.array([[[[0, 255], [3, 4]]], [[[5, 6], [7, 8]]]], np.float32)
    second = np.array([[[[-2, 1], [2, 3]]]], np.float32)  # negative: uint8 holds it no more
    writer = EntryWriter("k" * 24, np.float32, shape)
    writer.append(first)
    assert writer.stored == np.uint8
    writer.append(second)
    writer.finish(["a", "b", "c"], [])
    stored = open_entry("k" * 24)
    assert stored.index.stored == np.int16 and stored.index.dtype == np.float32
    assert [t.tolist() for t in stored] == [t.tolist() for t in (*first, *second)]
    assert all(t.dtype == np.float32 for t in stored)
    assert (tensors_dir() / f"{'k' * 24}.bin").stat().st_size == 3 * 4 * 2


def _images(folder, count=3):
    paths = [folder / f"{i}.png" for i in range(count)]
    for i, path in enumerate(paths):
        Image.new("RGB", (8, 8), (40 * i, 7, 200)).save(path)
    samples = [Sample(p.stem, p, {"person": 0}) for p in paths]
    return samples, Dataset("few", folder / "labels.csv", "0" * 64, tuple(samples))


def test_raw_pixels_in_a_float_tensor_are_cached_as_bytes_and_read_back_as_the_same_floats(tmp_path):
    samples, dataset = _images(tmp_path)
    pre = Preprocessing("resize_whole", (8, 8), "rgb", "bilinear", "none", "raw", "float32")
    preparation = image_preparation(pre, TensorSpec(1, (1, 8, 8, 3), 0.0, 0, 8 * 8 * 3 * 4))  # no resize: whole
    first = prepare_inputs(dataset, samples, preparation)
    again = prepare_inputs(dataset, samples, preparation)
    assert not first.from_cache and again.from_cache
    assert again.tensors.index.stored == np.uint8
    for sample, tensor in zip(samples, again.tensors, strict=True):
        assert tensor.dtype == np.float32
        np.testing.assert_array_equal(tensor, preparation.tensor_of(sample))
    assert (tensors_dir() / f"{again.key}.bin").stat().st_size == 3 * 8 * 8 * 3


def test_a_cut_short_entry_is_decoded_again(tmp_path):
    samples, dataset = _images(tmp_path)
    pre = Preprocessing("resize_whole", (4, 4), "rgb", "bilinear", "none", "raw", "uint8")
    preparation = image_preparation(pre, TensorSpec(3, (1, 4, 4, 3), 1.0, 0, 48))
    first = prepare_inputs(dataset, samples, preparation)
    rows = tensors_dir() / f"{first.key}.bin"
    rows.write_bytes(rows.read_bytes()[:-5])
    again = prepare_inputs(dataset, samples, preparation)
    assert not again.from_cache and rows.stat().st_size == 3 * 48


def test_a_float_input_the_model_quantizes_on_entry_is_sent_as_the_values_it_quantizes_to():
    quantized = TensorSpec(9, (1, 64), 0.0234, -7, 64)
    rng = np.random.default_rng(3)
    real = (rng.random((1, 64)) * 8 - 4).astype(np.float32)
    real[0, :4] = [0.0117, -0.0117, 100.0, -100.0]  # about half a step either side; clamped both ways
    plain = Preparation("p", TensorSpec(1, (1, 64), 0.0, 0, 256), lambda sample: real.copy())
    sent = as_the_model_quantizes(plain, quantized).tensor_of(None)
    assert sent.dtype == np.float32
    np.testing.assert_array_equal(affine_quantize(sent, quantized), affine_quantize(real, quantized))
    raw = TensorSpec(9, (1, 3), 1.0, -128, 3)  # the default model's: raw pixels
    pixels = Preparation("p", TensorSpec(1, (1, 3), 0.0, 0, 12), lambda s: np.array([[12.5, 254.6, 3.49]], np.float32))
    assert as_the_model_quantizes(pixels, raw).tensor_of(None).tolist() == [[13.0, 255.0, 3.0]]  # halves away from 0


def test_the_cache_lists_its_entries_and_prunes_the_unused_and_the_stale(tmp_path):
    samples, dataset = _images(tmp_path)
    pre = Preprocessing("resize_whole", (4, 4), "rgb", "bilinear", "none", "raw", "uint8")
    preparation = image_preparation(pre, TensorSpec(3, (1, 4, 4, 3), 1.0, 0, 48))
    old = prepare_inputs(dataset, samples[:2], preparation)
    new = prepare_inputs(dataset, samples, preparation)
    long_ago = time.time() - 40 * 86400
    os.utime(tensors_dir() / f"{old.key}.json", (long_ago, long_ago))
    (tensors_dir() / "0123456789abcdef01234567.npy").write_bytes(b"an entry of the first format")
    listed = {e.key: e for e in list_entries()}
    assert listed[new.key].samples == 3 and listed[new.key].bytes_per_sample > 48
    assert listed[old.key].samples == 2 and listed["0123456789abcdef01234567"].samples is None
    assert prune(30, everything=False, dry_run=True) and len(list_entries()) == 3  # a dry run removes nothing
    removed = {e.key for e in prune(30, everything=False)}
    assert old.key in removed and new.key not in removed
    assert [e.key for e in list_entries()] == [new.key]
    assert prepare_inputs(dataset, samples, preparation).from_cache
    prune(None, everything=True)
    assert list_entries() == []
