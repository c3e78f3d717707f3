"""The keyword streaming pipeline in the device core (firmware/core/hp_stream.c), over a real
pseudo-terminal, with scripted runners whose every score is known, and the protocol's refusals."""

import struct

import numpy as np
import pytest

from harness.link.client import DeviceError
from harness.link.framing import encode_frame
from harness.link.protocol import ErrorCode, Msg, parse_stream_audio
from harness.streaming.pipeline import StreamSettings
from tests.fake_runner import ChecksumRunner, ScriptedClassifier, ScriptedFrontend, core_on_pty
from tests.unit.device.test_device_core import _raw_exchange

# 1 sample = 1 ms. A row every 2 samples from a 4-sample window (its last sample); the model sees 3
# rows and names the class of the newest; results are averaged over 5 ms (the newest 3).
SETTINGS = StreamSettings(
    sample_rate=1000,
    window_samples=4,
    stride_samples=2,
    frames=3,
    row_bytes=1,
    model_every=1,
    classes=3,
    average_ms=5,
    min_count=2,
    suppression_ms=20,
    keyword_mask=0b110,  # class 0 is silence
    threshold=200,
)


def _audio(*runs: tuple[int, int]) -> bytes:
    return np.concatenate([np.full(n, value, "<i2") for value, n in runs]).tobytes()


def _stream(audio: bytes, settings=SETTINGS, chunk: int = 7, model=None):
    frontend = ScriptedFrontend(settings.window_samples)
    model = model or ScriptedClassifier(settings.frames * settings.row_bytes, settings.classes)
    with core_on_pty(model, frontend=frontend) as (_, client):
        client.hello()
        client.stream_start(settings.pack())
        results = [client.stream_audio(audio[i : i + 2 * chunk]) for i in range(0, len(audio), 2 * chunk)]
    return results, frontend, model


def test_detections_by_hand():
    # Rows k (k = 0, 1, ...) hold sample 2k+3 and end at 2k+4 ms; the model runs from row 2 on.
    # Samples 10-19 are class 1: rows 4-8 say 1 (t = 12..20). At t = 16 the three results within
    # 5 ms (t = 12, 14, 16) all say 1: average 255 >= 200, a detection. At 18 and 20 the 20 ms
    # suppression holds. Samples 40-49 are class 2: rows 19-23 (t = 42..50); at 46 the average of
    # 42, 44, 46 is 255 and 30 ms have passed: a detection. Class 0 wins often but is no keyword.
    results, frontend, model = _stream(_audio((0, 10), (1, 10), (0, 20), (2, 10), (0, 10)))
    found = [d for r in results for d in r.detections]
    assert found == [(1, 255, 16), (2, 255, 46)]
    last = results[-1]
    assert last.rows_total == (60 - 4) // 2 + 1 == 29
    assert last.model_runs == model.invokes == 29 - 2
    assert frontend.setups == 1


def test_suppression_and_threshold_by_hand():
    # With 40 ms suppression the class-2 event at 46 ms falls inside it (46 - 16 < 40).
    suppressed = SETTINGS.__class__(**{**vars(SETTINGS), "suppression_ms": 40})
    results, _, _ = _stream(_audio((0, 10), (1, 10), (0, 20), (2, 10), (0, 10)), suppressed)
    assert [d for r in results for d in r.detections] == [(1, 255, 16)]
    # Two rows of class 1 among three results average 170: under a 200 threshold, over a 160 one.
    short = _audio((0, 10), (1, 4), (0, 20))
    results, _, _ = _stream(short)
    assert not [d for r in results for d in r.detections]
    lower = SETTINGS.__class__(**{**vars(SETTINGS), "threshold": 160})
    results, _, _ = _stream(short, lower)
    assert [d[0] for r in results for d in r.detections] == [1]


@pytest.mark.parametrize(
    ("dtype", "top", "bottom", "score"),
    [
        (9, 127, -128, 255),  # int8: + 128
        (3, 210, 0, 210),  # uint8: as it is
        (1, 0.8, 0.0, 204),  # float32 probability: x 255, rounded
        (1, float("nan"), float("nan"), None),  # NaN scores 0: never a detection
    ],
)
def test_every_output_type_is_scored_on_one_scale(dtype, top, bottom, score):
    model = ScriptedClassifier(SETTINGS.frames * SETTINGS.row_bytes, SETTINGS.classes, dtype, top, bottom)
    results, _, _ = _stream(_audio((0, 10), (1, 10), (0, 20)), model=model)
    found = [d for r in results for d in r.detections]
    assert found == ([(1, score, 16)] if score else [])


def test_chunking_does_not_change_the_detections():
    audio = _audio((0, 10), (1, 10), (0, 20), (2, 10), (0, 10))
    one, _, _ = _stream(audio, chunk=1)
    many, _, _ = _stream(audio, chunk=60)
    assert [d for r in one for d in r.detections] == [d for r in many for d in r.detections]


def test_a_retransmitted_chunk_is_answered_from_cache_not_fed_twice():
    frontend = ScriptedFrontend(SETTINGS.window_samples)
    model = ScriptedClassifier(SETTINGS.frames, SETTINGS.classes)
    with core_on_pty(model, frontend=frontend) as (port, client):
        client.hello()
        client.stream_start(SETTINGS.pack())
        frame = encode_frame(Msg.STREAM_AUDIO, 40, _audio((1, 20)))
        first = parse_stream_audio(_raw_exchange(port, frame)[0].payload)
        again = parse_stream_audio(_raw_exchange(port, frame)[0].payload)
    assert first == again and first.rows_total == 9 and model.invokes == 7


def test_stream_requests_the_device_refuses():
    with core_on_pty(ChecksumRunner(3, 3)) as (_, client):
        client.hello()
        with pytest.raises(DeviceError) as refused:
            client.stream_start(SETTINGS.pack())
        assert refused.value.code == ErrorCode.UNSUPPORTED and "no audio frontend" in str(refused.value)
    frontend = ScriptedFrontend(SETTINGS.window_samples)
    with core_on_pty(ScriptedClassifier(3, 3), frontend=frontend) as (_, client):
        client.hello()
        with pytest.raises(DeviceError) as refused:
            client.stream_audio(_audio((0, 8)))
        assert refused.value.code == ErrorCode.MODEL_NOT_READY
        with pytest.raises(DeviceError) as refused:
            client.stream_start(SETTINGS.__class__(**{**vars(SETTINGS), "frames": 5}).pack())
        assert "model's tensors do not match" in str(refused.value)
        with pytest.raises(DeviceError) as refused:
            client.stream_start(struct.pack("<I", 1))
        assert refused.value.code == ErrorCode.BAD_PAYLOAD
        client.stream_start(SETTINGS.pack())
        with pytest.raises(DeviceError) as refused:
            client.stream_audio(b"\x01\x02\x03")
        assert refused.value.code == ErrorCode.BAD_PAYLOAD


def test_a_minute_of_speech_on_the_virtual_board_equals_the_host_reference(tmp_path):
    """micro_speech with its own audio frontend streaming on the virtual board; 24 spoken yes/no
    (the keyword demo set) between silence clips; the device's detections equal the host's."""
    import shutil

    from harness.audio.clips import read_clip, write_clip
    from harness.audio.dataset import load_keyword_dataset
    from harness.boards import get_board
    from harness.model.cards import load_card
    from harness.model.fetch import obtain_model
    from harness.model.tflite_file import read_tflite
    from harness.streaming.run import StreamRequest, run_stream
    from tests.conftest import fixture_model

    if shutil.which("espeak-ng") is None:
        pytest.skip("the keyword demo set needs espeak-ng")
    fixture_model("tflm/audio_preprocessor_int8.tflite")
    card = load_card("tflm_micro_speech")
    dataset = load_keyword_dataset("demo", card)
    by_label = {}
    for sample in dataset.samples:
        by_label.setdefault(card.output.labels[sample.label], []).append(sample.image_path)
    pieces = []
    for i in range(24):
        word = ("yes", "no")[i % 2]
        pieces += [read_clip(by_label[word][i // 2 % len(by_label[word])], 16000)]
        pieces += [read_clip(by_label["silence"][i % len(by_label["silence"])], 16000)] * 2
    wav = tmp_path / "stream.wav"
    write_clip(wav, np.concatenate(pieces), 16000)
    model = read_tflite(obtain_model(card))
    summary = run_stream(StreamRequest(card, model, get_board("sim"), wav, tmp_path / "results")).summary
    assert summary["audio"]["duration_ms"] == 72000
    assert summary["device_equals_host"]
    assert len(summary["detections"]["device"]) >= 5
    assert {d["label"] for d in summary["detections"]["device"]} <= {"yes", "no"}
    assert summary["feature_rows"] == (72000 * 16 - 480) // 320 + 1


def test_harness_stream_scores_a_minute_with_24_events_under_every_policy(tmp_path):
    """The README flow: compose a stream with `stream build`, run it on the virtual board with
    `stream`; device and host detections identical, scores under optimal, tf-compat and mlperf-sww."""
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import SHARED, fixture_model

    clips = SHARED / "fixtures" / "audio"
    if not clips.is_dir():
        pytest.skip("needs ../shared/fixtures/audio (the shared fixtures are absent in a fresh clone)")
    fixture_model("tflm/audio_preprocessor_int8.tflite")

    def harness(*args):
        command = [sys.executable, "-m", "harness", *args]
        env = os.environ.copy() | {"COLUMNS": "80"}
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)

    built = harness(
        "stream", "build", "--clips", str(clips), "--words", "yes,no", "--count", "24", "--duration-ms", "64000",
        "--background", str(clips / "noise_1000ms.wav"), "--snr-db", "10", "--seed", "1", "--out", "s.wav", "--quiet",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    done = harness("stream", "run", "--wav", "s.wav", "--ledger", "s.csv", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["device_equals_host"] and summary["timing_reference"] == "decision"
    scores = summary["scores"]
    assert scores["optimal"]["events"] == 24 and scores["optimal"]["hits"] >= 12
    assert scores["tf-compat"]["line"].endswith("false positive")
    assert "True Positives" in scores["mlperf-sww"]["line"]
    run = tmp_path / summary["run_dir"]
    assert (run / "detections_device.csv").read_text() == (run / "detections_host.csv").read_text()
    printed = harness("stream", "run", "--wav", "s.wav", "--ledger", "s.csv")
    assert len((printed.stdout + printed.stderr).splitlines()) < 25  # progress lines included, at 80 columns
    for line in ("identical to the host", "optimal (±1000 ms): recall ", "tf-compat (±", "mlperf-sww (wakeword 'yes')"):
        assert line in printed.stdout
    assert "per label" not in printed.stdout and "--verbose" in printed.stdout
    verbose = harness("stream", "run", "--wav", "s.wav", "--ledger", "s.csv", "--verbose")
    for heading in ("identical to the host", "optimal: one-to-one", "per label", "TF conventions", "mlperf-sww"):
        assert heading in verbose.stdout


def test_a_ledger_in_seconds_is_refused_before_the_board_starts(tmp_path):
    import os
    import subprocess
    import sys

    from harness.audio.clips import write_clip

    write_clip(tmp_path / "s.wav", np.zeros(32000, np.int16), 16000)
    (tmp_path / "s.csv").write_text("label,start_ms\nyes,0.5\nno,1.2\n")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "stream", "run", "--wav", "s.wav", "--ledger", "s.csv", "--results", "r"],
        cwd=tmp_path, capture_output=True, text=True, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "seconds" in done.stderr and not (tmp_path / "r").exists()


@pytest.mark.qemu
@pytest.mark.parametrize("card_name", ["tflm_micro_speech", "mlperf_tiny_kws"])
def test_the_pipeline_in_firmware_on_an_emulated_cortex_m4_equals_the_host(tmp_path, card_name):
    """The deployed pipeline in our ARM firmware (TFLM frontend with its signal kernels, the keyword
    model, the C recognizer) under QEMU: the same detections as the host reference. micro_speech
    brings its frontend model; MLPerf Tiny KWS's is generated from its card (float32 scores)."""
    from pathlib import Path

    from harness.audio.clips import read_clip, write_clip
    from harness.boards import get_board
    from harness.firmware.tflm_tree import TflmTree
    from harness.model.cards import load_card
    from harness.model.fetch import obtain_model
    from harness.model.tflite_file import read_tflite
    from harness.streaming.run import StreamRequest, run_stream
    from tests.conftest import SHARED, TFLM_TREE, fixture_model

    tree = TFLM_TREE
    if not tree:
        pytest.skip("needs a TFLM tree: ../shared/fixtures/tflm (absent in a fresh clone) or HARNESS_TFLM_TREE")
    card = load_card(card_name)
    fixture_model(card.mirror_path)
    fixture_model("tflm/audio_preprocessor_int8.tflite")
    clips = {w: read_clip(SHARED / "fixtures" / "audio" / f"{w}_1000ms.wav", 16000) for w in ("yes", "no", "silence")}
    wav = tmp_path / "s.wav"
    write_clip(wav, np.concatenate([clips[w] for w in ("silence", "yes", "silence", "no", "silence", "yes")]), 16000)
    request = StreamRequest(
        card, read_tflite(obtain_model(card)), get_board("qemu_m4"), wav, tmp_path / "r", tflm=TflmTree(Path(tree))
    )
    summary = run_stream(request).summary
    assert summary["device_equals_host"] and len(summary["detections"]["device"]) >= 2
    assert summary["busy"]["source"] == "emulated" and summary["busy"]["instructions"] > 0
    assert summary["busy"]["seconds"] is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"frames": 536870961, "row_bytes": 40}, "frames x row bytes"),  # the u32 product wraps to 1960
        ({"average_ms": 0}, "average_ms must hold"),
        ({"average_ms": 200}, "average_ms must hold"),  # 100 results in the window: more than the history
        ({"min_count": 4}, "min_count must be"),  # the 5 ms window holds 3 results
    ],
)
def test_stream_configurations_the_device_refuses(change, reason):
    frontend = ScriptedFrontend(SETTINGS.window_samples)
    with core_on_pty(ScriptedClassifier(3, 3), frontend=frontend) as (_, client):
        client.hello()
        with pytest.raises(DeviceError) as refused:
            client.stream_start(SETTINGS.__class__(**{**vars(SETTINGS), **change}).pack())
    assert refused.value.code == ErrorCode.BAD_PAYLOAD and reason in str(refused.value)
