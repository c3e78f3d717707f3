"""`harness stream build`: the written WAV holds each clip exactly where its ledger says, at the asked SNR."""

import csv
import itertools

import numpy as np
import pytest

from harness.cli import main
from harness.streaming.compose import read_wav
from tests.conftest import SHARED
from tests.forked_cli import run_harness_command

AUDIO = SHARED / "fixtures" / "audio"
PERIOD = 16_000  # the looped 1 s noise clip repeats every 16000 samples


@pytest.fixture
def clips():
    if not (AUDIO / "yes_1000ms.wav").is_file():
        pytest.skip("needs ../shared/fixtures/audio (the TFLM yes/no/noise clips; absent in a fresh clone)")
    return AUDIO


def _ledger(path):
    with open(path, newline="") as f:
        return [(r["label"], int(r["start_ms"]), int(r["end_ms"])) for r in csv.DictReader(f)]


def _clip_and_background(written: np.ndarray, start_ms: int, end_ms: int):
    """Split an event's span into clip and background, using the clip-free first second as the background."""
    span = np.arange(start_ms * 16, end_ms * 16)
    background = written[span % PERIOD]
    return written[span] - background, background


def _snr_db(clip, background):
    return 10 * np.log10(np.mean(clip**2) / np.mean(background**2))


@pytest.mark.parametrize("snr_db", [10.0, 0.0])
def test_clips_at_ledger_times_and_snr_measured_from_the_wav(tmp_path, clips, snr_db):
    out = tmp_path / "stream.wav"
    args = ["stream", "build", "--clips", str(clips), "--out", str(out), "--at", "yes:1000,no:3250,yes:6100"]
    args += ["--duration-ms", "8000", "--background", str(clips / "noise_1000ms.wav"), "--snr-db", str(snr_db)]
    assert main(args) == 0
    written = read_wav(out)
    assert len(written) == 8000 * 16
    ledger = _ledger(tmp_path / "stream.csv")
    assert ledger == [("yes", 1000, 2000), ("no", 3250, 4250), ("yes", 6100, 7100)]
    residual = written - written[np.arange(len(written)) % PERIOD]
    inside = np.zeros(len(written), bool)
    for label, start, end in ledger:
        clip, background = _clip_and_background(written, start, end)
        assert abs(_snr_db(clip, background) - snr_db) < 0.5, label
        source = read_wav(clips / f"{label}_1000ms.wav")
        assert np.corrcoef(clip, source)[0, 1] > 0.99  # this very clip, at this very sample
        inside[start * 16 : end * 16] = True
    assert np.abs(residual[~inside]).max() <= 1  # nothing but the background elsewhere (rounding aside)


def test_random_placement_keeps_gaps_and_is_seeded(tmp_path, clips):
    def build(name, seed):
        out = tmp_path / f"{name}.wav"
        args = ["stream", "build", "--clips", str(clips), "--out", str(out), "--count", "20", "--words", "yes,no"]
        args += ["--min-gap-ms", "1000", "--duration-ms", "62000", "--seed", str(seed)]
        assert main(args) == 0
        return read_wav(out), _ledger(tmp_path / f"{name}.csv")

    written, ledger = build("a", 7)
    assert build("b", 7)[1] == ledger and build("c", 8)[1] != ledger
    assert len(ledger) == 20 and {label for label, _, _ in ledger} == {"yes", "no"}
    assert ledger[0][1] >= 1000 and ledger[-1][2] <= 61000
    assert all(b[1] - a[2] >= 1000 for a, b in itertools.pairwise(ledger))
    for label, start, end in ledger:  # silence background: each clip's samples, unscaled, at its ledger time
        np.testing.assert_array_equal(written[start * 16 : end * 16], read_wav(clips / f"{label}_1000ms.wav"))


def test_overlapping_clips_refused_in_one_line_and_nothing_written(tmp_path, clips):
    done = run_harness_command(
        ["stream", "build", "--clips", str(clips), "--out", str(tmp_path / "s.wav"), "--at", "yes:1000,no:1500"]
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "overlaps" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_device_form_needs_a_wav(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["stream", "run"])
    assert exited.value.code == 2
    assert "required: --wav" in capsys.readouterr().err


def test_compose_refuses_what_it_cannot_do_honestly(tmp_path):
    import numpy as np

    from harness.audio.clips import write_clip
    from harness.errors import UserError
    from harness.streaming.compose import build_stream, find_clips, random_placements

    with pytest.raises(UserError, match="must not be negative"):
        random_placements([1000], 5000, -10, np.random.default_rng(0))
    clips = tmp_path / "clips"
    clips.mkdir()
    write_clip(clips / "_odd.wav", np.ones(16000, np.int16), 16000)
    with pytest.raises(UserError, match="no label in its name"):
        find_clips(clips)
    (clips / "_odd.wav").unlink()
    write_clip(clips / "yes_1.wav", (np.sin(np.arange(16000) / 5) * 8000).astype(np.int16), 16000)
    background = np.zeros(48000, np.int16)
    background[:16000] = 500  # loud only where no clip goes
    write_clip(tmp_path / "bed.wav", background, 16000)
    with pytest.raises(UserError, match="background is silent under the clip"):
        build_stream(
            clips, tmp_path / "s.wav", tmp_path / "s.csv", at=[("yes", 1500)], duration_ms=3000,
            background=str(tmp_path / "bed.wav"), snr_db=10,
        )  # fmt: skip
    assert not (tmp_path / "s.wav").exists()
