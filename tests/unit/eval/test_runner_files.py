"""The MLPerf Tiny runner's datasets (y_labels.csv and .bin files) as the kws01 and ic01 cards read them: byte
for byte to the DUT, every wrong row one line, and each reference DUT's printed results read back exactly."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.errors import UserError
from harness.eval.runner_files import file_of, load_runner_dataset, runner_file_preparation
from harness.link.eembc import EembcClient
from harness.model.cards import load_card
from harness.model.tflite_file import read_tflite
from harness.paths import models_dir
from harness.tensors import TensorSpec
from tests.conftest import assert_refused_in_one_line
from tests.reference_dut import ReferenceDut, results_text
from tests.tiny_models import int8_classifier

KWS = TensorSpec(9, (1, 49, 10, 1), 0.5847, 83, 490)
SCORES = TensorSpec(9, (1, 12), 1 / 256, -128, 12)


def _folder(tmp_path: Path, rows: list[str], sizes: dict[str, int], seed: int = 0) -> Path:
    folder = tmp_path / "kws01"
    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(seed)
    for name, size in sizes.items():
        (folder / name).write_bytes(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
    (folder / "y_labels.csv").write_text("\n".join(rows) + "\n")
    return folder


def test_a_runner_folder_gives_a_sample_per_file_with_its_class(tmp_path):
    folder = _folder(tmp_path, ["a.bin,12,7", "", "b.bin,12,0"], {"a.bin": 490, "b.bin": 490})
    dataset = load_runner_dataset(str(folder), load_card("mlperf_tiny_kws01"))
    assert [(s.id, s.label) for s in dataset.samples] == [("a.bin", 7), ("b.bin", 0)]


def test_windowed_rows_give_a_sample_per_window_of_their_file(tmp_path):
    folder = _folder(tmp_path, ["a@b.bin,12,3,490,100"], {"a@b.bin": 890})
    samples = load_runner_dataset(str(folder), load_card("mlperf_tiny_kws01"), windows=True).samples
    assert [s.id for s in samples] == [f"a@b.bin@{k}" for k in (0, 100, 200, 300, 400)]
    assert {file_of(s) for s in samples} == {"a@b.bin"}  # a file name may hold the window mark
    tensor = runner_file_preparation(load_card("mlperf_tiny_kws01").eembc, KWS).tensor_of(samples[2])
    assert tensor.tobytes() == (folder / "a@b.bin").read_bytes()[200:690]


@pytest.mark.parametrize(
    "rows, sizes, expected",
    [
        (["a.bin,10,1"], {"a.bin": 490}, "counts 10 classes but the model card has 12"),
        (["a.bin,12,12"], {"a.bin": 490}, "class 12 of a.bin is not in 0..11"),
        (["a.bin,12,x"], {"a.bin": 490}, "are not whole numbers"),
        (["a.bin,12"], {"a.bin": 490}, "2 fields; a row is file,classes,class"),
        (["b.bin,12,1"], {"a.bin": 490}, "b.bin is not in"),
        (["a.bin,12,1"], {"a.bin": 3072}, "a.bin is 3072 bytes but the model takes 490"),
        (["a.bin,12,1,490,0"], {"a.bin": 490}, "a window must be the model's input"),
        (["a.bin,12,1,2560,512"], {"a.bin": 9000}, "a window must be the model's input (490 bytes)"),
        (["a.bin,12,1,490,490", "b.bin,12,1"], {"a.bin": 980, "b.bin": 490}, "3 fields where the rows before have 5"),
        ([""], {}, "names no file"),
    ],
)
def test_a_wrong_row_is_one_line_naming_it(tmp_path, rows, sizes, expected):
    folder = _folder(tmp_path, rows, sizes)
    with pytest.raises(UserError, match=re.escape(expected)):
        load_runner_dataset(str(folder), load_card("mlperf_tiny_kws01"), windows=True)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("../outside.bin,12,1", "lies outside"),
        ("sub/../../outside.bin,12,1", "lies outside"),
        ("{outside},12,1", "lies outside"),
        ("link.bin,12,1", "lies outside"),
        ("a.bin,12,\u0661", "are not whole numbers"),
        ("a.bin,1_2,1", "are not whole numbers"),
        ("a.bin,12," + "9" * 5001, "are not whole numbers"),
    ],
    ids=["dotdot", "dotdot-deeper", "absolute", "link-out", "arabic-indic-digit", "underscore", "5001-digits"],
)
def test_a_row_naming_a_file_outside_the_dataset_or_no_ascii_number_is_refused(tmp_path, row, expected):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(bytes(490))
    folder = _folder(tmp_path, [row.format(outside=outside)], {"a.bin": 490})
    (folder / "link.bin").symlink_to(outside)
    with pytest.raises(UserError, match=re.escape(expected)):
        load_runner_dataset(str(folder), load_card("mlperf_tiny_kws01"))


def test_labels_that_are_not_utf8_or_have_a_bom_are_read_through_the_one_reader(tmp_path):
    folder = _folder(tmp_path, ["a.bin,12,7"], {"a.bin": 490})
    labels = folder / "y_labels.csv"
    labels.write_bytes(b"\xef\xbb\xbfa.bin,12,7\n")
    assert [s.id for s in load_runner_dataset(str(folder), load_card("mlperf_tiny_kws01")).samples] == ["a.bin"]
    labels.write_bytes(b"a.bin,12,7\n\xff\n")
    with pytest.raises(UserError, match="not UTF-8"):
        load_runner_dataset(str(folder), load_card("mlperf_tiny_kws01"))


def test_windows_are_refused_where_the_runner_sends_whole_files(tmp_path):
    folder = _folder(tmp_path, ["a.bin,12,1,490,490"], {"a.bin": 980})
    with pytest.raises(UserError, match=re.escape("which the runner sends only to ad01; card mlperf_tiny_kws01")):
        load_runner_dataset(str(folder), load_card("mlperf_tiny_kws01"))


def test_a_file_is_the_whole_input_never_its_first_bytes(tmp_path):
    """A model of another benchmark (--model-file) takes none of a file, not the part it fits."""
    folder = _folder(tmp_path, ["a.bin,12,1"], {"a.bin": 490})
    sample = load_runner_dataset(str(folder), load_card("mlperf_tiny_kws01")).samples[0]
    smaller = TensorSpec(9, (1, 100), 0.5, 0, 100)
    with pytest.raises(ValueError, match=re.escape("a.bin holds 490 bytes in all; the model takes 100")):
        runner_file_preparation(load_card("mlperf_tiny_kws01").eembc, smaller).tensor_of(sample)


def test_a_folder_without_y_labels_says_what_the_card_takes(tmp_path):
    with pytest.raises(UserError, match=re.escape("takes the runner's files: pass")):
        load_runner_dataset(str(tmp_path), load_card("mlperf_tiny_kws01"))


def test_uint8_files_become_the_int8_tensor_the_reference_makes_of_them(tmp_path):
    folder = _folder(tmp_path, ["a.bin,10,1"], {"a.bin": 3072})
    card = load_card("mlperf_tiny_ic01")
    sample = load_runner_dataset(str(folder), card).samples[0]
    spec = TensorSpec(9, (1, 32, 32, 3), 1.0, -128, 3072)
    tensor = runner_file_preparation(card.eembc, spec).tensor_of(sample)
    raw = np.frombuffer((folder / "a.bin").read_bytes(), np.uint8)
    expected = (raw.astype(np.int16) - 128).astype(np.int8)  # both branches of the reference's th_load_tensor
    assert np.array_equal(tensor.reshape(-1), expected)


@pytest.mark.parametrize("model", ["kws01", "ic01", "vww01"])
def test_every_int8_output_comes_back_from_what_each_reference_prints(model):
    """kws01 cuts its digits off (0.996 stays 0.996, 0.00390625 prints 0.003): still one int8 step apart."""
    spec = SCORES if model != "vww01" else TensorSpec(9, (1, 2), 1 / 256, -128, 2)
    client = EembcClient(None, KWS, spec)
    count = spec.bytes
    for first in range(-128, 128, count):
        q = (np.arange(first, first + count) % 256 - 128).astype(np.int8)
        line = "m-results-[" + results_text(model, q, (spec.scale, spec.zero_point)) + "]"
        assert client._output_bytes(line) == q.tobytes(), line


CARD_FIELDS = {"kws01": ((1, 49, 10, 1), 12, (0.5847, 83)), "ic01": ((1, 32, 32, 3), 10, (1.0, -128))}


def _test_card(tmp_path: Path, model: str) -> Path:
    """The shipped card, with a small model of the reference model's tensors in place of the real one."""
    shape, classes, quantization = CARD_FIELDS[model]
    (tmp_path / "m.tflite").write_bytes(int8_classifier(shape, classes, quantization))
    text = (models_dir() / f"mlperf_tiny_{model}.toml").read_text()
    text = re.sub(
        r"(?ms)^\[file\].*?(?=^\[preprocessing\])",
        '[file]\nname = "m.tflite"\n[source]\nkind = "path"\npath = "m.tflite"\n\n',
        text,
    )
    card = tmp_path / f"{model}.toml"
    card.write_text(text.replace('name = "mlperf_tiny_', 'name = "test_'))
    return card


def _dataset(tmp_path: Path, model: str, files: int = 6) -> Path:
    shape, classes, _ = CARD_FIELDS[model]
    rows = [f"f{i}.bin,{classes},{i % classes}" for i in range(files)]
    return _folder(tmp_path, rows, {f"f{i}.bin": int(np.prod(shape)) for i in range(files)}, seed=3)


def _eval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness", "eval", "--protocol", "eembc", "--results", str(tmp_path / "r")]
    return subprocess.run([*command, *args, "--json"], capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.parametrize("model", ["kws01", "ic01"])
def test_the_reference_dut_gets_each_file_byte_for_byte_and_its_results_equal_the_hosts(tmp_path, model):
    """A real board whose firmware behaves as the reference submission (tests/reference_dut.py): kws01's
    int8 bytes as they are, ic01's uint8 bytes (the DUT subtracts 128), the printed results read back."""
    from harness.model.tflm import make_interpreter

    card, folder = _test_card(tmp_path, model), _dataset(tmp_path, model)
    spec = read_tflite(tmp_path / "m.tflite")
    interpreter = make_interpreter((tmp_path / "m.tflite").read_bytes(), 64 * 1024)
    received = []

    def network(values):
        received.append(values.tobytes())
        interpreter.set_input(values.reshape(spec.input.shape), 0)
        interpreter.invoke()
        return interpreter.get_output(0).reshape(-1)

    output = (spec.output.scale, spec.output.zero_point)
    with ReferenceDut(model=model, input_size=spec.input.bytes, network=network, output=output) as dut:
        done = _eval(
            tmp_path, "--board", "nucleo_h743", "--port", dut.path, "--model", str(card), "--dataset", str(folder)
        )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["samples"] == 6 and summary["bit_exact"] == {"tflm": 6, "litert_ref": 6}
    sent = [(folder / f"f{i}.bin").read_bytes() for i in range(6)]
    if model == "ic01":  # what the reference computes from the file's bytes
        sent = [(np.frombuffer(b, np.uint8) ^ 0x80).tobytes() for b in sent]
    assert sorted(received) == sorted(sent) and not dut.crashed


def test_a_kws01_card_runs_on_the_virtual_boards_eembc_dut(tmp_path):
    card, folder = _test_card(tmp_path, "kws01"), _dataset(tmp_path, "kws01", files=12)
    done = _eval(tmp_path, "--board", "sim", "--model", str(card), "--dataset", str(folder), "--subset", "all,yes")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["samples"] == 12 and summary["bit_exact"]["tflm"] == 12
    assert summary["subsets"]["yes"]["n"] == 1 and summary["task"] == "classification"


def test_a_files_card_without_its_dataset_folder_is_one_line_naming_the_option(tmp_path):
    done = _eval(tmp_path, "--board", "sim", "--model", str(_test_card(tmp_path, "kws01")))
    assert_refused_in_one_line(done, "takes the runner's files: pass --dataset the folder with y_labels.csv")
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_perf_times_the_first_runner_file_on_a_reference_dut_at_the_baud_given(tmp_path):
    card, folder = _test_card(tmp_path, "kws01"), _dataset(tmp_path, "kws01")
    received = []

    def network(values):
        received.append(values.tobytes())
        return np.zeros(12, np.int8)

    with ReferenceDut(model="kws01", input_size=490, network=network) as dut:
        command = [sys.executable, "-m", "harness", "perf", "--board", "nucleo_h743", "--port", dut.path]
        command += ["--protocol", "eembc", "--baud", "9600", "--model", str(card), "--dataset", str(folder)]
        done = subprocess.run([*command, "--runs", "3", "--json"], capture_output=True, text=True, timeout=300)
        baud = dut.baud
    assert done.returncode == 0, done.stderr
    assert baud == 9600
    assert len(json.loads(done.stdout)["runs"]) == 3
    assert received and set(received) == {(folder / "f0.bin").read_bytes()}
