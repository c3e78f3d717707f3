"""The frontend model the harness writes from microfrontend settings (MLPerf Tiny KWS card): its
tables equal TFLM's own, its features TensorFlow's audio_microfrontend op, and the card runs on
the virtual board, clip by clip and streaming."""

import json
import os
import shutil

import numpy as np
import pytest

from harness.audio.clips import read_clip
from harness.audio.microfrontend import MicrofrontendSettings, filterbank, frontend_model, hann_window
from harness.model.tflm import make_interpreter
from tests.conftest import SHARED, fixture_model
from tests.forked_cli import run_harness_command

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="the keyword demo set needs espeak-ng")
KWS = MicrofrontendSettings(16000, 480, 10, 125.0, 4000.0, 6, 1.0)  # the card's settings, unscaled


def _harness(tmp_path, *args):
    return run_harness_command([*args], cwd=tmp_path, env=os.environ.copy())


def _features(model: bytes, audio: np.ndarray, frames: int) -> np.ndarray:
    interpreter = make_interpreter(model, 1 << 16)
    rows = []
    for frame in range(frames):
        interpreter.set_input(audio[frame * 320 : frame * 320 + 480], 0)
        interpreter.invoke()
        rows.append(np.array(interpreter.get_output(0)).copy())
    return np.stack(rows)


def test_window_and_filterbank_equal_the_tables_in_tflms_audio_preprocessor():
    """micro_speech's frontend model holds TFLM's tables for 40 channels, 125-7500 Hz (its python
    generator truncates the weights where microfrontend rounds them)."""
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

    path = fixture_model("tflm/audio_preprocessor_int8.tflite")
    model = schema.ModelT.InitFromPackedBuf(bytearray(path.read_bytes()), 0)
    graph = model.subgraphs[0]

    def constant(name: str) -> np.ndarray:
        tensor = next(t for t in graph.tensors if t.name.decode() == name)
        return np.frombuffer(bytes(model.buffers[tensor.buffer].data), np.int16)

    bank = filterbank(MicrofrontendSettings(16000, 480, 40, 125.0, 7500.0, 6, 1.0), rounded=False)
    assert np.array_equal(hann_window(480), constant("Const"))
    assert np.array_equal(bank.weights, constant("signal_filter_bank/Const"))
    assert np.array_equal(bank.unweights, constant("signal_filter_bank/Const_1"))
    assert np.array_equal(bank.channel_frequency_starts, constant("signal_filter_bank/Const_2"))
    assert np.array_equal(bank.channel_weight_starts, constant("signal_filter_bank/Const_3"))
    assert np.array_equal(bank.channel_widths, constant("signal_filter_bank/Const_4"))
    assert (bank.start_index, bank.end_index) == (5, 241)  # the SignalEnergy range in that model


def test_features_equal_tensorflows_microfrontend_op():
    """Every feature value equal to the op's, on real and synthetic clips; and so the keyword model's
    top-1."""
    tf = pytest.importorskip("tensorflow")
    from tensorflow.lite.experimental.microfrontend.python.ops import audio_microfrontend_op

    folder = SHARED / "fixtures" / "audio"
    if not folder.is_dir():
        pytest.skip("needs ../shared/fixtures/audio (the shared fixtures are absent in a fresh clone)")
    kws = make_interpreter(fixture_model("mlperf_tiny/keyword_spotting.tflite").read_bytes(), 1 << 17)
    model = frontend_model(KWS)
    rng = np.random.default_rng(7)
    tone = np.sin(np.arange(16160) * 2 * np.pi * 440 / 16000) * np.linspace(0, 20000, 16160)
    clips = [np.concatenate([read_clip(path, 16000, 16000), np.zeros(160, np.int16)]) for path in folder.glob("*.wav")]
    clips += [(tone + rng.normal(0, 300, 16160)).astype(np.int16), rng.normal(0, 30, 16160).astype(np.int16)]
    for audio in clips:
        ours = _features(model, audio, 50)
        reference = (
            audio_microfrontend_op.audio_microfrontend(
                tf.constant(audio),
                sample_rate=16000,
                window_size=30,
                window_step=20,
                num_channels=10,
                lower_band_limit=125.0,
                upper_band_limit=4000.0,
                even_smoothing=0.0,
                odd_smoothing=0.0,
                enable_pcan=False,
                out_scale=1,
                out_type=tf.uint16,
            )
            .numpy()
            .astype(np.float32)
        )  # fmt: skip  (zero smoothing: no noise reduction)
        assert ours.shape == reference.shape == (50, 10)
        assert np.array_equal(ours, reference), np.argwhere(ours != reference)[:5]
        tops = []
        for features in (ours, reference):
            kws.set_input((features * 0.25).reshape(1, 50, 10, 1).astype(np.float32), 0)
            kws.invoke()
            tops.append(int(np.argmax(kws.get_output(0))))
        assert tops[0] == tops[1]


def test_the_model_is_the_same_bytes_for_the_same_settings_and_scales_its_output():
    assert frontend_model(KWS) == frontend_model(KWS)
    audio = (np.sin(np.arange(16160) * 0.3) * 8000).astype(np.int16)
    plain = _features(frontend_model(KWS), audio, 3)
    quarter = _features(frontend_model(MicrofrontendSettings(**{**vars(KWS), "scale": 0.25})), audio, 3)
    assert plain.max() > 100 and np.array_equal(quarter, plain * np.float32(0.25))


def _card_copy(tmp_path, old: str, new: str) -> str:
    from harness.paths import models_dir

    fixture_model("mlperf_tiny/keyword_spotting.tflite")
    card = (models_dir() / "mlperf_tiny_kws.toml").read_text()
    assert old in card
    (tmp_path / "card.toml").write_text(card.replace(old, new, 1))
    return "card.toml"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ("[frontend]\n", "[frontend]\nnoise_reduction = true\n", "noise_reduction"),
        ('kind = "microfrontend"', 'kind = "microfrontends"', "kind"),
        ("log_scale_shift = 6", "log_scale_shift = -1", "log_scale_shift"),
        ("log_scale_shift = 6", "log_scale_shift = 12", "log_scale_shift"),
        ("scale = 0.25", "scale = nan", "scale"),
        ("scale = 0.25", "scale = 0", "scale"),
        ("channels = 10", "channels = 10.5", "channels"),
        ("upper_band_hz = 4000.0", "upper_band_hz = 9000.0", "upper_band_hz"),
        ("window_ms = 30", "window_ms = 0", "window"),
        ("[frontend]\n", "caveat = 3\n[frontend]\n", "caveat"),
    ],
)
def test_frontend_settings_it_cannot_build_are_refused_in_one_line(tmp_path, old, new, named):
    card = _card_copy(tmp_path, old, new)
    if named == "caveat":  # a top-level key: before the first table
        text = (tmp_path / card).read_text().replace("caveat = 3\n", "")
        (tmp_path / card).write_text("caveat = 3\n" + text.replace('caveat = """', 'old_caveat = """', 1))
    done = _harness(tmp_path, "eval", "--model", card, "--results", "r")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_caveat_is_printed_as_written(tmp_path):
    """Brackets are text (TOML table names are what a caveat quotes), never console markup."""
    card = _card_copy(tmp_path, 'caveat = """', 'caveat = """see [frontend] and [/] here; ')
    done = _harness(tmp_path, "eval", "--model", card, "--limit", "2", "--results", "r")
    assert done.returncode == 0, done.stderr
    assert "caveat (model card): see [frontend] and [/] here;" in done.stdout


@pytest.mark.slow
@needs_espeak
def test_mlperf_kws_on_the_virtual_board_matches_the_host_byte_for_byte(tmp_path):
    fixture_model("mlperf_tiny/keyword_spotting.tflite")
    done = _harness(tmp_path, "eval", "--model", "mlperf_tiny_kws", "--json", "--results", "r")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["bit_exact"]["tflm"] == summary["samples"] == 90
    assert summary["model_caveat"].startswith("the frontend is a reconstruction")
    assert summary["subsets"]["all"]["device"]["accuracy"] > 0.5  # chance is 1/12
    printed = _harness(tmp_path, "eval", "--model", "mlperf_tiny_kws", "--results", "r")
    assert "caveat (model card): the frontend is a reconstruction" in printed.stdout


@pytest.mark.slow
@needs_espeak
def test_mlperf_kws_streams_a_minute_of_ten_keywords_equal_to_the_host(tmp_path):
    """`stream build` from the keyword demo set's clips (all ten keywords, 24 events in 64 s), then
    `stream` on the virtual board: the generated frontend and the model run in the device core."""
    from harness.audio.dataset import load_keyword_dataset
    from harness.model.cards import load_card

    fixture_model("mlperf_tiny/keyword_spotting.tflite")
    clips = load_keyword_dataset("demo", load_card("mlperf_tiny_kws")).samples[0].image_path.parent
    words = "yes,no,up,down,left,right,on,off,stop,go"
    built = _harness(
        tmp_path, "stream", "build", "--clips", str(clips), "--words", words, "--count", "24",
        "--duration-ms", "64000", "--background", str(clips / "silence_00.wav"), "--snr-db", "20",
        "--seed", "1", "--out", "s.wav", "--quiet",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    done = _harness(
        tmp_path, "stream", "run", "--model", "mlperf_tiny_kws", "--wav", "s.wav", "--ledger", "s.csv", "--json"
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["device_equals_host"] and summary["audio"]["duration_ms"] == 64000
    scores = summary["scores"]
    assert scores["optimal"]["events"] == 24 and scores["optimal"]["hits"] >= 12
    assert len({d["label"] for d in summary["detections"]["device"]}) >= 5
    assert scores["tf-compat"]["line"].endswith("false positive")
    assert "True Positives" in scores["mlperf-sww"]["line"]
