"""`harness stream build`: a test stream of labelled clips over a background, with its millisecond ledger.

Clips are 16 kHz mono 16-bit WAVs; a clip's label is its folder name inside the clip folder, or, for files at
the top, the file name up to the first underscore (yes_1000ms.wav -> yes). The background is silence or a
WAV looped over the whole stream. With an SNR, each clip is scaled so that its mean power over its own span
is snr_db above the background's mean power over that same span; when the mix would clip, the whole stream
(background and clips alike) is scaled down, which leaves every SNR unchanged.
"""

import itertools
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.errors import UserError, setting
from harness.files import write_atomically
from harness.stream.ledger import Event, write_ledger

SAMPLE_RATE = 16_000
SAMPLES_PER_MS = SAMPLE_RATE // 1000
FULL_SCALE = 32767


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


def read_wav(path: Path, frames: bool = True) -> np.ndarray:
    """16 kHz mono 16-bit samples as float64 in int16 units; without `frames` only the header is checked."""
    try:
        with wave.open(str(path), "rb") as w:
            shape = (w.getnchannels(), w.getsampwidth(), w.getframerate())
            data = w.readframes(w.getnframes()) if frames else b""
    except (OSError, EOFError, wave.Error) as exc:
        raise UserError(f"cannot read {path} as a WAV file ({exc}); replace it or move it out of the folder") from exc
    if shape != (1, 2, SAMPLE_RATE):
        channels, width, rate = shape
        raise UserError(
            f"{path} is {channels} channel(s), {8 * width}-bit, {rate} Hz; streams need 16 kHz mono 16-bit "
            "(convert it first, e.g. sox in.wav -r 16000 -c 1 -b 16 out.wav)"
        )
    return np.frombuffer(data, dtype="<i2").astype(np.float64)


def wav_duration_ms(path: Path) -> int:
    try:
        with wave.open(str(path), "rb") as w:
            return round(w.getnframes() * 1000 / w.getframerate())
    except (OSError, EOFError, wave.Error) as exc:
        raise UserError(f"cannot read {path} as a WAV file ({exc})") from exc


def write_wav(path: Path, samples: np.ndarray) -> None:
    def write(partial: Path) -> None:
        with wave.open(str(partial), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(SAMPLE_RATE)
            w.writeframes(samples.astype("<i2").tobytes())

    write_atomically(path, write)


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
        if not label or not at.isdigit():
            raise UserError(f"{setting('at')} item {item!r} is not label:start_ms (e.g. yes:1000,no:3500)")
        placements.append((label, int(at)))
    return placements


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
    clips = find_clips(clips_dir)
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
        labels = [wanted[i] for i in rng.integers(0, len(wanted), count)]
    chosen = [clips[label][rng.integers(0, len(clips[label]))] for label in labels]
    audio = [read_wav(path) for path in chosen]
    lengths_ms = [-(-len(a) // SAMPLES_PER_MS) for a in audio]  # whole ms, rounded up
    starts = [start for _, start in at] if at is not None else None
    if starts is None:
        starts = random_placements(lengths_ms, duration_ms, min_gap_ms, rng)
    if duration_ms is None:
        duration_ms = max((s + n for s, n in zip(starts, lengths_ms, strict=True)), default=0) + 1000
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
    write_wav(Path(out_wav), samples)
    write_ledger(Path(out_ledger), events)  # the ledger last: a ledger on disk means its audio is complete
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
