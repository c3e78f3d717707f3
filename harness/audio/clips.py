"""16-bit mono WAV clips, read and written with the standard library.

Every WAV harness reads comes through `read_wav_file`: the file is checked as a regular file of at most the WAV
size (harness/reading.py) before `wave` parses it, and the audio is the frames actually present, never what the
header claims: a header claiming an hour over five seconds of samples would make rates per hour 720 times low.
"""

import os
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.files import write_atomically
from harness.reading import WAV, open_binary

FRAMES_PER_READ = 1 << 20  # read in pieces: a header may claim 4 GiB of frames a short file does not hold


@dataclass(frozen=True)
class WavAudio:
    """A WAV file's format and the whole frames it holds (`declared_frames`: what its header says)."""

    channels: int
    width: int  # bytes per sample
    rate: int
    data: bytes
    declared_frames: int

    @property
    def frames(self) -> int:
        return len(self.data) // (self.channels * self.width)

    def format(self) -> str:
        return f"{self.channels} channel(s), {8 * self.width}-bit, {self.rate} Hz"

    def mismatch(self) -> str | None:
        """What differs between the header and the samples, when it does (the samples are what counts)."""
        if self.frames == self.declared_frames:
            return None
        return (
            f"its header declares {self.declared_frames} frames but it holds {self.frames} "
            f"({self.frames / self.rate:g} s, the duration used)"
        )


def _read_frames(clip: wave.Wave_read) -> bytes:
    pieces = []
    while piece := clip.readframes(FRAMES_PER_READ):
        pieces.append(piece)
    data = b"".join(pieces)
    frame_bytes = clip.getnchannels() * clip.getsampwidth()
    return data[: len(data) // frame_bytes * frame_bytes]


def read_wav_file(path: Path, frames: bool = True) -> WavAudio:
    """The WAV's format and frames (without `frames`, only the header is read). A file that is missing raises
    FileNotFoundError; one that is no WAV, or a WAV at 0 Hz, ValueError; one that is no regular file or is too
    large, UserError (harness/reading.py)."""
    path = Path(path)
    if not os.path.lexists(path):
        raise FileNotFoundError(f"{path} does not exist")
    with open_binary(path, WAV) as handle:
        try:
            with wave.open(handle, "rb") as clip:
                channels, width, rate = clip.getnchannels(), clip.getsampwidth(), clip.getframerate()
                if rate <= 0:
                    raise ValueError(f"a WAV at {rate} Hz (its header names no sample rate)")
                data = _read_frames(clip) if frames else b""
                declared = clip.getnframes()
        except (wave.Error, EOFError) as exc:
            raise ValueError(f"not a readable WAV file ({exc})") from None
    return WavAudio(channels, width, rate, data, declared)


def read_clip(path: Path, sample_rate: int, samples: int | None = None) -> np.ndarray:
    """int16 samples; with `samples`, zero-padded or cut to that length (as TF's speech commands
    input pipeline pads short clips). Raises ValueError for any other format."""
    wav = read_wav_file(path)
    if wav.channels != 1 or wav.width != 2 or wav.rate != sample_rate:
        raise ValueError(f"{wav.format()}; needs mono 16-bit at {sample_rate} Hz")
    audio = np.frombuffer(wav.data, dtype="<i2").astype(np.int16)
    if samples is not None:
        audio = np.pad(audio[:samples], (0, max(0, samples - len(audio))))
    return audio


def write_clip(path: Path, audio: np.ndarray, sample_rate: int) -> None:
    """Written whole under a temporary name, then renamed: never a half-written WAV, never over a non-file."""

    def write(partial: Path) -> None:
        # the file is opened here, not by wave.open(name): when that open fails (a read-only folder) wave's
        # half-made writer prints a traceback from its __del__ after harness's own one line
        with open(partial, "wb") as handle, wave.open(handle, "wb") as clip:
            clip.setnchannels(1)
            clip.setsampwidth(2)
            clip.setframerate(sample_rate)
            clip.writeframes(np.asarray(audio, dtype="<i2").tobytes())

    write_atomically(Path(path), write)
