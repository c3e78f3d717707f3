"""`harness stream run` refuses a bad WAV, ledger or card before it fetches a model or starts a board: with no
model to be had (an empty HARNESS_MODEL_MIRROR, a fresh cache, every download through a closed port, as on a
clean clone without ../shared and offline) the refusal is still the file's own line, and nothing is fetched."""

import io
import wave

import pytest

from tests.conftest import FETCH_NOTICE, assert_refused_in_one_line, closed_port
from tests.hostile import FOLDER, make_files, run_harness, tree


def _wav(samples: int) -> bytes:
    """A 16 kHz mono 16-bit WAV of silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(bytes(2 * samples))
    return buffer.getvalue()


RUN = ("stream", "run", "--wav", "s.wav", "--results", "r")
GOOD = {"s.wav": _wav(32000)}  # 2 s: longer than the keyword model's 1 s window
CASES = {
    "wav-not-riff": ((), {"s.wav": b"not a wav"}, ("s.wav", "not a readable WAV")),
    "wav-folder": ((), {"s.wav": FOLDER}, ("s.wav", "folder")),
    "wav-shorter-than-the-window": ((), {"s.wav": _wav(800)}, ("s.wav", "less than the model's")),
    "ledger-in-seconds": (("--ledger", "l.csv"), {"l.csv": b"yes,0.5\n"}, ("l.csv", "seconds")),
    "ledger-utf16": (("--ledger", "l.csv"), {"l.csv": "a,b\n".encode("utf-16")}, ("l.csv", "UTF-16")),
    "ledger-past-the-end": (("--ledger", "l.csv"), {"l.csv": b"yes,9000\n"}, ("l.csv", "9000")),
    "image-card": (("--model", "wv_quality_k_2_c_3"), {}, ("image_classification", "--model")),
}


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """A working folder where no model can be had: an empty mirror, an empty cache, every proxy a closed port."""
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("HARNESS_MODEL_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{closed_port()}")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def test_good_input_reaches_the_fetch_and_the_fetch_fails_here(offline):
    """What the cases rely on: a run that gets as far as the model cannot fetch it here."""
    make_files(offline, GOOD | {"l.csv": b"label,start_ms\nyes,500\n"})
    done = run_harness(offline, *RUN, "--ledger", "l.csv")
    assert_refused_in_one_line(done, "tflm_micro_speech", "HARNESS_MODEL_MIRROR")
    assert not (offline / "r").exists()


@pytest.mark.parametrize("case", CASES)
def test_bad_stream_input_is_refused_before_the_model_is_fetched(offline, case):
    args, files, expected = CASES[case]
    make_files(offline, GOOD | files)
    before = tree(offline)
    done = run_harness(offline, *RUN, *args)
    assert_refused_in_one_line(done, *expected)
    assert not any(FETCH_NOTICE.match(line) for line in done.stderr.splitlines()), done.stderr
    assert tree(offline) == before
