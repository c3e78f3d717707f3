import numpy as np
import pytest
from PIL import Image

from harness.errors import UserError
from harness.eval.preprocess import load_rgb, real_input, resize_bilinear, to_tensor
from harness.model.card import Preprocessing
from harness.tensors import TensorSpec


def test_bilinear_matches_tensorflow_half_pixel_rule():
    # tf.image.resize([[0, 1]], (1, 4), 'bilinear') with half-pixel centres gives 0, .25, .75, 1.
    row = np.array([[[0.0], [1.0]]], dtype=np.float32)
    assert resize_bilinear(row, 1, 4)[0, :, 0].tolist() == [0.0, 0.25, 0.75, 1.0]
    image = np.arange(16, dtype=np.float32).reshape(4, 4, 1)
    assert resize_bilinear(image, 2, 2)[..., 0].tolist() == [[2.5, 4.5], [10.5, 12.5]]
    assert np.array_equal(resize_bilinear(image, 4, 4), image)


def _pre(**changes):
    base = dict(
        pipeline="resize_whole",
        size=(2, 2),
        color="rgb",
        interpolation="bilinear",
        crop="none",
        scaling="raw",
        dtype="uint8",
    )
    return Preprocessing(**(base | changes))


def test_scalings_and_greyscale():
    rgb = np.full((4, 4, 3), 255, dtype=np.uint8)
    assert real_input(rgb, _pre()).max() == 255
    assert real_input(rgb, _pre(scaling="unit")).max() == pytest.approx(1.0)
    assert real_input(rgb, _pre(scaling="symmetric")).max() == pytest.approx(1.0)
    assert real_input(rgb, _pre(color="grayscale")).shape == (2, 2, 1)


def test_every_declared_pipeline_is_done_and_decoded_as_declared():
    from harness.eval.preprocess import GEOMETRIES, decoder_for
    from harness.model.pipelines import DECODERS, IMAGE_PIPELINES

    assert set(GEOMETRIES) == {p.geometry for p in IMAGE_PIPELINES.values()}
    rgb = np.zeros((6, 8, 3), dtype=np.uint8)
    for name, pipeline in IMAGE_PIPELINES.items():
        pre = _pre(pipeline=name, interpolation=pipeline.interpolation, crop=pipeline.crop)
        assert pipeline.decoder in DECODERS and decoder_for(pre) == pipeline.decoder
        assert real_input(rgb, pre).shape == (2, 2, 3)
    with pytest.raises(UserError, match="pipeline 'stretch' is unknown; use one of resize_whole, wv-challenge"):
        real_input(rgb, _pre(pipeline="stretch"))


def test_the_preprocessing_page_lists_the_declared_pipelines():
    from harness.model.pipelines import IMAGE_PIPELINES
    from tests.conftest import REPO

    rows = {}
    for line in (REPO / "docs" / "preprocessing.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 4:
            rows[cells[0].strip("`")] = cells
    assert set(rows) == set(IMAGE_PIPELINES)
    for name, (_, geometry, decoding, _) in rows.items():
        pipeline = IMAGE_PIPELINES[name]
        assert pipeline.interpolation in geometry and ("centre crop" in geometry) == (pipeline.crop == "centre")
        assert decoding == {"tf": "as `tf.io.decode_jpeg`", "pil": "as PIL"}[pipeline.decoder], name


def test_quantize_into_int8_with_scale_and_zero_point():
    spec = TensorSpec(9, (1, 2, 2, 1), 0.5, -10, 4)
    real = np.array([0.0, 1.0, 100.0, -100.0], dtype=np.float32).reshape(2, 2, 1)
    assert to_tensor(real, spec).ravel().tolist() == [-10, -8, 127, -128]


def test_uint8_raw_truncate_or_round():
    spec = TensorSpec(3, (1, 1, 2, 1), 1.0, 0, 2)
    real = np.array([1.6, 254.9], dtype=np.float32).reshape(1, 2, 1)
    assert to_tensor(real, spec).ravel().tolist() == [2, 255]
    assert to_tensor(real, spec, rounding="truncate").ravel().tolist() == [1, 254]


def test_shape_mismatch_is_a_user_error():
    with pytest.raises(UserError, match="fix the card"):
        to_tensor(np.zeros((3, 3, 3), np.float32), TensorSpec(1, (1, 2, 2, 3), 0.0, 0, 48))


def test_area_resize_averages_by_overlap():
    from harness.eval.preprocess import resize_area

    image = np.arange(16, dtype=np.float32).reshape(4, 4, 1)
    assert resize_area(image, 2, 2)[..., 0].tolist() == [[2.5, 4.5], [10.5, 12.5]]
    row = np.array([[[0.0], [3.0], [6.0]]], dtype=np.float32)  # three pixels into two: 1.5 pixels each
    assert resize_area(row, 1, 2)[0, :, 0] == pytest.approx([(0 + 0.5 * 3) / 1.5, (0.5 * 3 + 6) / 1.5])


def test_paper_pipeline_crops_the_centre_of_the_short_side_resize():
    from harness.eval.preprocess import paper_resize_and_crop

    image = np.zeros((100, 200, 3), dtype=np.float32)
    image[:, 100:] = 255.0  # right half white
    out = paper_resize_and_crop(image, 50, 50)  # resized to 50x100, crop columns 25..75
    assert out.shape == (50, 50, 3)
    assert out[0, 0, 0] == 0 and out[0, -1, 0] == 255


def test_resizes_match_tensorflow_when_it_is_installed():
    tf = pytest.importorskip("tensorflow", reason="tensorflow is not a test dependency; this check runs where it is")
    from harness.eval.preprocess import resize_area, resize_bilinear

    rng = np.random.default_rng(0)
    for h, w, oh, ow in [(480, 640, 224, 299), (37, 91, 96, 96)]:
        image = rng.uniform(0, 255, (h, w, 3)).astype(np.float32)
        area = tf.image.resize(image, (oh, ow), method="area").numpy()
        bilinear = tf.image.resize(image, (oh, ow), method="bilinear").numpy()
        assert np.abs(resize_area(image, oh, ow) - area).max() < 0.01
        assert np.abs(resize_bilinear(image, oh, ow) - bilinear).max() < 1e-3


@pytest.mark.parametrize("mode", ["RGB", "L", "CMYK"])
@pytest.mark.parametrize("subsampling", [0, 2])
def test_jpeg_pixels_equal_pils_decode_and_rgb_conversion(tmp_path, mode, subsampling):
    rng = np.random.default_rng(7)
    pixels = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    path = tmp_path / "x.jpg"
    Image.fromarray(pixels).convert(mode).save(path, quality=83, subsampling=subsampling)
    with Image.open(path) as image:
        expected = np.asarray(image.convert("RGB"))
    np.testing.assert_array_equal(load_rgb(path), expected)


def test_a_truncated_jpeg_is_an_error_not_a_picture(tmp_path):
    path = tmp_path / "x.jpg"
    Image.fromarray(np.full((64, 64, 3), 90, np.uint8)).save(path)
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises((OSError, ValueError)):
        load_rgb(path)


def test_wake_vision_pipeline_equals_tensorflows_decode_and_resize_on_the_demo_set():
    """The reference decodes with tf.io.decode_jpeg (libjpeg-turbo's fast integer DCT by default),
    resizes with tf.image.resize and casts: the same uint8 tensors, every pixel of every image."""
    tf = pytest.importorskip("tensorflow", reason="tensorflow is not a test dependency; this check runs where it is")
    from harness.eval.dataset import load_dataset
    from harness.eval.preprocess import image_tensor
    from harness.model.card import Preprocessing
    from harness.tensors import TensorSpec

    pre = Preprocessing("wv-challenge", (96, 96), "rgb", "bilinear", "none", "raw", "uint8", "truncate")
    spec = TensorSpec(3, (1, 96, 96, 3), 1.0, 0, 96 * 96 * 3)
    for sample in load_dataset("demo").samples:
        image = tf.io.decode_jpeg(sample.image_path.read_bytes(), channels=3)
        expected = tf.cast(tf.image.resize(image, (96, 96), method="bilinear"), tf.uint8).numpy()
        np.testing.assert_array_equal(image_tensor(sample.image_path, pre, spec)[0], expected, err_msg=sample.id)


def test_cached_tensors_follow_a_file_replaced_under_the_same_name(tmp_path):
    """The second preparation of the same files comes from the cache; replacing one image (same
    name, same label file) decodes again and gives the new picture's tensor."""
    import os

    from harness.eval.inputs import image_preparation, prepare_inputs
    from harness.samples import Dataset, Sample

    paths = [tmp_path / f"{i}.png" for i in range(3)]
    for i, path in enumerate(paths):
        Image.new("RGB", (8, 8), (40 * i, 0, 0)).save(path)
    samples = [Sample(p.stem, p, {"person": 0}) for p in paths]
    dataset = Dataset("three", tmp_path / "labels.csv", "0" * 64, tuple(samples))
    pre = Preprocessing("resize_whole", (4, 4), "rgb", "bilinear", "none", "raw", "uint8")
    preparation = image_preparation(pre, TensorSpec(3, (1, 4, 4, 3), 1.0, 0, 48))  # uint8
    first = prepare_inputs(dataset, samples, preparation)
    again = prepare_inputs(dataset, samples, preparation)
    assert not first.from_cache and again.from_cache
    Image.new("RGB", (8, 8), (0, 200, 0)).save(paths[1])
    os.utime(paths[1], ns=(1, 1))  # a different modification time even on a coarse clock
    replaced = prepare_inputs(dataset, samples, preparation)
    assert not replaced.from_cache
    assert replaced.tensors[1][0, 0, 0].tolist() == [0, 200, 0]
    assert np.array_equal(replaced.tensors[0], first.tensors[0])
