"""The dataset-side readers on their own: the label-file parser takes any text to rows or a UserError (property
tests), numbers are read in ASCII digits only, a row's file lies inside its image folder, and a 16-bit PNG
decodes to its 8-bit twin or is refused."""

import io
import math
import string
import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from harness.digits import MAX_DIGITS, NotFinite, ascii_float, ascii_int, float_or_none, int_or_none
from harness.errors import UserError
from harness.eval.dataset import read_labels
from harness.eval.detection import read_boxes
from harness.eval.label_files import inside
from harness.eval.preprocess import load_rgb
from harness.eval.score_file import read_predictions
from harness.reading import MAP_TRUTH

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CSV_TEXT = st.text(alphabet=st.sampled_from(string.printable + ",\"'\ufeff\u0661\u00e9\x00"), max_size=400)


@FAST
@given(text=CSV_TEXT)
def test_any_text_is_labels_or_a_user_error(tmp_path, text):
    path = tmp_path / "labels.csv"
    path.write_text(text)
    try:
        dataset = read_labels(path)
    except UserError:
        return
    for sample in dataset.samples:
        assert sample.image_path.resolve().is_relative_to((tmp_path / "images").resolve())
        assert all(value in (1, 0, -1) for value in sample.flags.values())


@FAST
@given(data=st.binary(max_size=400))
def test_any_bytes_are_predictions_or_a_user_error(tmp_path, data):
    path = tmp_path / "p.csv"
    path.write_bytes(data)
    try:
        predicted = read_predictions(path)
    except UserError:
        return
    assert set(predicted.values()) <= {0, 1}


@FAST
@given(data=st.binary(max_size=300) | CSV_TEXT.map(str.encode))
def test_any_bytes_are_boxes_or_a_user_error(tmp_path, data):
    path = tmp_path / "truth.csv"
    path.write_bytes(data)
    try:
        boxes = read_boxes(path, MAP_TRUTH)
    except UserError:
        return
    assert all(abs(v) <= 1e6 for box in boxes for v in box.coords())


@given(text=st.text(max_size=20))
def test_ascii_numbers_take_ascii_digits_only(text):
    number, integer = float_or_none(text), int_or_none(text)
    if integer is not None:
        assert text.strip().lstrip("+-").isascii() and integer == int(text)
    if number is not None:
        assert text.strip().isascii() and math.isfinite(number)


@pytest.mark.parametrize("digit", ["\u0661", "\u06f1", "\u0967", "\uff11", "1_0", "1 0", "", "0x1", "\u0661\u0660"])
def test_what_int_takes_but_a_file_must_not_say(digit):
    assert int_or_none(digit) is None and float_or_none(digit) is None
    with pytest.raises(ValueError):
        ascii_int(digit)
    with pytest.raises(ValueError):
        ascii_float(digit)


@pytest.mark.parametrize(("text", "value"), [("1", 1), (" -1 ", -1), ("+0", 0), ("007", 7)])
def test_ascii_integers(text, value):
    assert ascii_int(text) == value == int_or_none(text)


@pytest.mark.parametrize("text", ["nan", "-Infinity", "inf", "1e400"])
def test_a_number_that_is_not_finite_is_named_so(text):
    with pytest.raises(NotFinite, match="not a finite number"):
        ascii_float(text)
    assert float_or_none(text) is None


def test_an_integer_is_at_most_max_digits_long():
    assert ascii_int("9" * MAX_DIGITS) == int("9" * MAX_DIGITS)
    assert int_or_none("9" * (MAX_DIGITS + 1)) is None and int_or_none("-" + "9" * 5000) is None


def test_a_row_naming_a_file_outside_the_image_folder_is_refused(tmp_path):
    images = tmp_path / "images"
    (images / "sub").mkdir(parents=True)
    (tmp_path / "outside.png").write_bytes(b"x")
    (images / "out.png").symlink_to(tmp_path / "outside.png")
    (images / "in.png").write_bytes(b"x")
    (images / "alias.png").symlink_to(images / "in.png")
    labels = tmp_path / "labels.csv"
    refused = ("../outside.png", "sub/../../outside.png", str(tmp_path / "outside.png"), "out.png", "")
    for name in (*refused, "sub/../in.png"):  # '..' is refused wherever it leads
        with pytest.raises(UserError, match=r"labels\.csv line 7: the file name .* reaches outside the image folder"):
            inside(images, name, labels, 7)
    for name in ("in.png", "alias.png", "sub/x.png", "not-yet-there.png"):
        assert inside(images, name, labels, 7) == images / name


def test_a_dataset_whose_image_folder_is_a_link_keeps_its_rows(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.png").write_bytes(b"x")
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "images").symlink_to(real, target_is_directory=True)  # as `harness dataset build` makes
    assert inside(tmp_path / "ds" / "images", "a.png", tmp_path / "ds" / "labels.csv", 2).name == "a.png"


def _png(pixels: np.ndarray, colour_type: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    height, width = pixels.shape[:2]
    big_endian = pixels.astype(pixels.dtype.newbyteorder(">"))
    raw = b"".join(b"\0" + big_endian[y].tobytes() for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, pixels.dtype.itemsize * 8, colour_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


GREY = np.arange(256, dtype=np.uint8).reshape(16, 16)


def test_a_16_bit_grey_png_decodes_to_its_8_bit_twin(tmp_path):
    (tmp_path / "eight.png").write_bytes(_png(GREY, 0))
    (tmp_path / "sixteen.png").write_bytes(_png(GREY.astype(np.uint16) * 257, 0))
    with Image.open(tmp_path / "sixteen.png") as opened:
        assert opened.mode.startswith("I;16")  # what PIL alone would clip to 255 where the value passes 255
    eight, sixteen = load_rgb(tmp_path / "eight.png"), load_rgb(tmp_path / "sixteen.png")
    assert sixteen.dtype == np.uint8 and np.array_equal(sixteen, eight)
    assert np.array_equal(eight[..., 0], GREY)


def test_16_bit_grey_between_twins_rounds_to_the_nearest(tmp_path):
    values = np.array([[0, 128, 129, 385, 65535, 65407]], np.uint16)
    (tmp_path / "g.png").write_bytes(_png(values, 0))
    assert load_rgb(tmp_path / "g.png")[0, :, 0].tolist() == [0, 0, 1, 1, 255, 255]


@pytest.mark.parametrize(("channels", "colour_type"), [(3, 2), (4, 6), (2, 4)])
def test_a_16_bit_colour_png_is_refused_not_truncated(tmp_path, channels, colour_type):
    pixels = np.random.default_rng(1).integers(0, 65536, (4, 4, channels), dtype=np.uint16)
    (tmp_path / "c.png").write_bytes(_png(pixels, colour_type))
    with pytest.raises(ValueError, match="8 bits a channel"):
        load_rgb(tmp_path / "c.png")


def test_an_8_bit_png_decodes_as_before(tmp_path):
    pixels = np.random.default_rng(2).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    (tmp_path / "c.png").write_bytes(_png(pixels, 2))
    assert np.array_equal(load_rgb(tmp_path / "c.png"), pixels)
    buffer = io.BytesIO()
    Image.fromarray(pixels).convert("P").save(buffer, format="PNG")
    (tmp_path / "p.png").write_bytes(buffer.getvalue())
    with Image.open(tmp_path / "p.png") as palette:
        assert np.array_equal(load_rgb(tmp_path / "p.png"), np.asarray(palette.convert("RGB")))


def test_an_image_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    os.mkfifo(tmp_path / "a.png")
    with pytest.raises(UserError, match=r"image .*a\.png is a FIFO"):
        load_rgb(tmp_path / "a.png")


BOM = b"\xef\xbb\xbf"


def test_a_bom_is_dropped_by_every_csv_reader(tmp_path):
    """Excel's UTF-8 CSV starts with a BOM: it must not become part of the first column's name or value."""
    from harness.eval.demo_dataset import COLUMNS

    labels = (",".join(COLUMNS) + "\na.png," + ",".join(["1"] + ["0"] * 18) + "\n").encode()
    predictions = b"filename,prediction,score\na.png,1,0.5\n"
    boxes = b"1,1,0.9,10,10,20,20\n"
    for name, data in (("labels.csv", labels), ("p.csv", predictions), ("b.csv", boxes)):
        (tmp_path / name).write_bytes(data)
        (tmp_path / f"bom-{name}").write_bytes(BOM + data)
    with_bom, without = read_labels(tmp_path / "bom-labels.csv"), read_labels(tmp_path / "labels.csv")
    assert [(s.id, s.flags) for s in with_bom.samples] == [(s.id, s.flags) for s in without.samples]
    assert read_predictions(tmp_path / "bom-p.csv") == read_predictions(tmp_path / "p.csv") == {"a.png": 1}
    assert read_boxes(tmp_path / "bom-b.csv") == read_boxes(tmp_path / "b.csv")


def test_a_clean_label_file_with_a_bom_joins_like_one_without(tmp_path):
    from harness.eval.label_files import clean_values

    data = b"filename,original_label,clean_label\na.png,1,-2\n"
    (tmp_path / "c.csv").write_bytes(data)
    (tmp_path / "bom.csv").write_bytes(BOM + data)
    assert clean_values(tmp_path / "bom.csv") == clean_values(tmp_path / "c.csv") == {"a.png": "-2"}
