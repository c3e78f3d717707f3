"""`harness stream build`: a test stream of labelled clips over a background, with its millisecond ledger.

Clips are 16 kHz mono 16-bit WAVs; a clip's label is its folder name inside the clip folder, or, for files at
the top, the file name up to the first underscore (yes_1000ms.wav -> yes). The background is silence or a
WAV looped over the whole stream. With an SNR, each clip is scaled so that its mean power over its own span
is snr_db above the background's mean power over that same span; when the mix would clip, the whole stream
(background and clips alike) is scaled down, which leaves every SNR unchanged.
"""

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.audio.clips import WavAudio, read_wav_file, write_clip
from harness.console import notice
from harness.digits import int_or_none
from harness.errors import UserError, setting
from harness.files import check_output
from harness.streaming.ledger import Event, write_ledger

SAMPLE_RATE = 16_000
SAMPLES_PER_MS = SAMPLE_RATE // 1000
FULL_SCALE = 32767
MAX_STREAM_MS = 3_600_000  # an hour of audio: the mix holds it as float64 several times over (about 2 GiB)


@dataclass
class Placement:
    label: str
    start_ms: int
    end_ms: int
    clip: str
    snr_db: float | None  # of the written clip against the written background over its span (None: silence)


@dataclass
class BuiltStream:
    wav: str
    ledger: str
    duration_ms: int
    background: str
    snr_db: float | None
    headroom_gain_db: float  # applied to the whole stream to avoid clipping (0 when none was needed)
    placements: list[Placement]


def _wav(path: Path, frames: bool = True, fix: str = "") -> WavAudio:
    try:
        return read_wav_file(path, frames)
    except (FileNotFoundError, ValueError) as exc:
        reason = "No such file or directory" if isinstance(exc, FileNotFoundError) else exc
        raise UserError(f"cannot read {path} as a WAV file ({reason}){fix}") from None


def read_wav(path: Path, frames: bool = True) -> np.ndarray:
    """16 kHz mono 16-bit samples as float64 in int16 units; without `frames` only the header is checked."""
    wav = _wav(path, frames, "; replace it or move it out of the folder")
    if (wav.channels, wav.width, wav.rate) != (1, 2, SAMPLE_RATE):
        raise UserError(
            f"{path} is {wav.format()}; streams need 16 kHz mono 16-bit "
            "(convert it first, e.g. sox in.wav -r 16000 -c 1 -b 16 out.wav)"
        )
    if wav.declared_frames == 0 or (frames and wav.frames == 0):
        raise UserError(f"{path} holds no audio (0 frames); record or convert it again, or move it out of the folder")
    return np.frombuffer(wav.data, dtype="<i2").astype(np.float64)


def wav_duration_ms(path: Path) -> int:
    """The audio's length from the frames it holds; a header claiming another length is said, not believed."""
    wav = _wav(path)
    if wav.frames == 0:
        raise UserError(f"{path} holds no audio (0 frames); rates per hour need the audio they were measured over")
    if problem := wav.mismatch():
        notice(f"harness: note: {path}: {problem}")
    return round(wav.frames * 1000 / wav.rate)


def write_wav(path: Path, samples: np.ndarray) -> None:
    write_clip(path, samples, SAMPLE_RATE)


def find_clips(folder: Path) -> dict[str, list[Path]]:
    """Label -> clip files, sorted, from the file or folder names."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"clip folder {folder} does not exist")
    clips: dict[str, list[Path]] = {}
    for path in sorted(folder.rglob("*.wav")):
        relative = path.relative_to(folder)
        label = relative.parts[0] if len(relative.parts) > 1 else path.stem.split("_")[0]
        if not label:
            raise UserError(f"{path}: no label in its name (label_anything.wav) nor a label folder; rename it")
        clips.setdefault(label, []).append(path)
    if not clips:
        raise UserError(f"no .wav clips in {folder}; put them in a folder per label (yes/a.wav) or name them label_…")
    return clips


def parse_placements(text: str) -> list[tuple[str, int]]:
    """'yes:1000,no:3500' -> [('yes', 1000), ('no', 3500)]."""
    placements = []
    for item in (p.strip() for p in text.split(",") if p.strip()):
        label, _, at = item.rpartition(":")
        start = int_or_none(at)
        if not label or start is None or start < 0:
            raise UserError(f"{setting('at')} item {item!r} is not label:start_ms (e.g. yes:1000,no:3500)")
        if start >= MAX_STREAM_MS:
            raise UserError(f"{setting('at')} item {item!r} starts past the longest stream ({MAX_STREAM_MS} ms, 1 h)")
        placements.append((label, start))
    return placements


def check_duration(duration_ms: int | None) -> None:
    if duration_ms is not None and not 0 < duration_ms <= MAX_STREAM_MS:
        raise UserError(
            f"{setting('duration_ms')} {duration_ms} is outside 1 to {MAX_STREAM_MS} ms (1 h); "
            "compose longer tests as several streams"
        )


def check_outputs(out_wav: Path, out_ledger: Path) -> tuple[Path, Path]:
    """The stream and ledger paths, resolved, if they may be written: regular files or nothing yet (never a device,
    FIFO or folder), and not one file. Checked before any work."""
    wav = check_output(out_wav, "stream (--out)")
    ledger = check_output(out_ledger, "ledger (--ledger)")
    if wav == ledger:
        raise UserError(
            f"the stream {out_wav} and its ledger {out_ledger} are the same file, so the ledger would be written "
            "over the stream; name the stream .wav or give --ledger another file"
        )
    return wav, ledger


def check_not_inputs(outputs: tuple[Path, Path], inputs: list[tuple[str, Path]]) -> None:
    """Neither output (resolved) is an input: a clip or the background would be overwritten by what it made."""
    for name, path in inputs:
        resolved = Path(os.path.realpath(path))
        for written, flag in zip(outputs, ("--out", "--ledger"), strict=True):
            if resolved == written:
                raise UserError(f"{flag} {written} is the {name} {path}: it would be overwritten; write elsewhere")


def random_placements(lengths_ms: list[int], duration_ms: int, min_gap_ms: int, rng: np.random.Generator) -> list[int]:
    """Start times keeping at least min_gap_ms between clips and at both ends of the stream."""
    if min_gap_ms < 0:
        raise UserError(f"{setting('min_gap_ms')} must not be negative (got {min_gap_ms})")
    count = len(lengths_ms)
    slack = duration_ms - sum(lengths_ms) - (count + 1) * min_gap_ms
    if slack < 0:
        need = sum(lengths_ms) + (count + 1) * min_gap_ms
        raise UserError(
            f"{count} clips with {setting('min_gap_ms')} {min_gap_ms} need a stream of at least {need} ms, "
            f"not {duration_ms}; lengthen {setting('duration_ms')} or lower {setting('count')}"
        )
    shifts = np.sort(np.floor(rng.uniform(0, slack, count)).astype(int)) if count else []
    starts, taken = [], 0
    for i, (shift, length) in enumerate(zip(shifts, lengths_ms, strict=True)):
        starts.append(int(shift) + (i + 1) * min_gap_ms + taken)
        taken += length
    return starts


def _background(spec: str, samples: int) -> tuple[np.ndarray, str]:
    if spec == "silence":
        return np.zeros(samples), "silence"
    noise = read_wav(Path(spec))
    if not noise.any():
        raise UserError(f"background {spec} is silent; use {setting('background')} silence instead")
    return np.resize(noise, samples), str(spec)


def _power(x: np.ndarray) -> float:
    return float(np.mean(np.square(x))) if len(x) else 0.0


def build_stream(
    clips_dir: Path,
    out_wav: Path,
    out_ledger: Path,
    *,
    at: list[tuple[str, int]] | None = None,
    count: int | None = None,
    words: list[str] | None = None,
    min_gap_ms: int = 1000,
    duration_ms: int | None = None,
    background: str = "silence",
    snr_db: float | None = None,
    seed: int = 0,
) -> BuiltStream:
    if (at is None) == (count is None):
        raise UserError(
            f"give either {setting('at')} label:ms,... or {setting('count')} N (with {setting('duration_ms')})"
        )
    if background == "silence" and snr_db is not None:
        raise UserError(
            f"an SNR needs a background to be relative to: add {setting('background')} noise.wav "
            f"or drop {setting('snr_db')}"
        )
    check_duration(duration_ms)
    outputs = check_outputs(out_wav, out_ledger)
    clips = find_clips(clips_dir)
    inputs = [("clip", path) for paths in clips.values() for path in paths]
    if background != "silence":
        inputs.append(("background", Path(background)))
    check_not_inputs(outputs, inputs)
    wanted = words or sorted(clips)
    unknown = sorted({w for w in [*wanted, *(label for label, _ in at or [])] if w not in clips})
    if unknown:
        raise UserError(f"no clips labelled {', '.join(unknown)} in {clips_dir} (found: {', '.join(sorted(clips))})")
    for label in sorted({*wanted, *(label for label, _ in at or [])}):
        for path in clips[label]:  # every clip that may be drawn, so none is passed over unsaid
            read_wav(path, frames=False)
    rng = np.random.default_rng(seed)
    if at is not None:
        labels = [label for label, _ in at]
    else:
        if duration_ms is None:
            raise UserError(f"{setting('count')} needs {setting('duration_ms')}: how long the stream is")
        _check_count_fits(count, duration_ms)
        labels = [wanted[i] for i in rng.integers(0, len(wanted), count)]
    chosen = [clips[label][rng.integers(0, len(clips[label]))] for label in labels]
    audio = [read_wav(path) for path in chosen]
    lengths_ms = [-(-len(a) // SAMPLES_PER_MS) for a in audio]  # whole ms, rounded up
    starts = [start for _, start in at] if at is not None else None
    if starts is None:
        starts = random_placements(lengths_ms, duration_ms, min_gap_ms, rng)
    if duration_ms is None:
        duration_ms = max((s + n for s, n in zip(starts, lengths_ms, strict=True)), default=0) + 1000
        check_duration(duration_ms)
    _check_layout(labels, starts, lengths_ms, duration_ms)

    total = duration_ms * SAMPLES_PER_MS
    bed, background_name = _background(background, total)
    mix = bed.copy()
    snrs = []
    for clip, start_ms in zip(audio, starts, strict=True):
        span = slice(start_ms * SAMPLES_PER_MS, start_ms * SAMPLES_PER_MS + len(clip))
        noise_power, clip_power = _power(bed[span]), _power(clip)
        if snr_db is not None:
            if noise_power == 0:
                raise UserError(
                    f"the background is silent under the clip at {start_ms} ms, so no gain gives an SNR of "
                    f"{snr_db} dB; use a background without silent stretches, or drop {setting('snr_db')}"
                )
            if clip_power == 0:
                raise UserError(f"a chosen clip is silent, so no gain gives it an SNR of {snr_db} dB; leave it out")
            clip = clip * np.sqrt(noise_power * 10 ** (snr_db / 10) / clip_power)
        mix[span] += clip
        snrs.append(10 * np.log10(_power(clip) / noise_power) if noise_power > 0 and _power(clip) > 0 else None)
    peak = float(np.max(np.abs(mix))) if total else 0.0
    scale = min(1.0, FULL_SCALE / peak) if peak > 0 else 1.0
    samples = np.clip(np.round(mix * scale), -FULL_SCALE - 1, FULL_SCALE)

    events = [Event(label, s, s + n) for label, s, n in zip(labels, starts, lengths_ms, strict=True)]
    events.sort(key=lambda e: e.start_ms)
    _write(out_wav, lambda: write_wav(Path(out_wav), samples))
    _write(out_ledger, lambda: write_ledger(Path(out_ledger), events))  # last: a ledger means its audio is complete
    placements = [
        Placement(label, s, s + n, str(path), None if snr is None else round(float(snr), 2))
        for label, s, n, path, snr in zip(labels, starts, lengths_ms, chosen, snrs, strict=True)
    ]
    placements.sort(key=lambda p: p.start_ms)
    return BuiltStream(
        str(out_wav),
        str(out_ledger),
        duration_ms,
        background_name,
        snr_db,
        round(20 * float(np.log10(scale)), 3),
        placements,
    )


def _write(target: Path, write) -> None:
    try:
        write()
    except OSError as exc:  # a read-only folder, a full disk: named by the file meant, not its partial twin
        raise UserError(f"cannot write {target} ({exc.strerror or exc}); choose a folder you can write") from None


def _check_count_fits(count: int, duration_ms: int) -> None:
    """Before drawing: a clip lasts at least 1 ms, so a --count above the duration cannot fit (and a huge one
    would be drawn before random_placements says so)."""
    if count > duration_ms:
        raise UserError(
            f"{count} clips cannot fit in {duration_ms} ms; "
            f"lengthen {setting('duration_ms')} or lower {setting('count')}"
        )


def _check_layout(labels: list[str], starts: list[int], lengths_ms: list[int], duration_ms: int) -> None:
    spans = sorted(zip(starts, lengths_ms, labels, strict=True))
    for (s1, n1, l1), (s2, _, l2) in itertools.pairwise(spans):
        if s2 < s1 + n1:
            raise UserError(f"{l1} at {s1} ms ({n1} ms long) overlaps {l2} at {s2} ms; space the clips apart")
    for start, length, label in spans:
        if start + length > duration_ms:
            raise UserError(
                f"{label} at {start} ms ends at {start + length} ms, after the stream's end ({duration_ms} ms)"
            )
