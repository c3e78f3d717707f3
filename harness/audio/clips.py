"""16-bit mono WAV clips, read and written with the standard library."""

import os
import wave
from pathlib import Path

import numpy as np


def read_clip(path: Path, sample_rate: int, samples: int | None = None) -> np.ndarray:
    """int16 samples; with `samples`, zero-padded or cut to that length (as TF's speech commands
    input pipeline pads short clips). Raises ValueError for any other format."""
    try:
        with wave.open(str(path), "rb") as clip:
            channels, width, rate = clip.getnchannels(), clip.getsampwidth(), clip.getframerate()
            data = clip.readframes(clip.getnframes())
    except (wave.Error, EOFError) as exc:
        raise ValueError(f"not a readable WAV file ({exc})") from exc
    if channels != 1 or width != 2 or rate != sample_rate:
        raise ValueError(f"{channels} channel(s), {8 * width}-bit, {rate} Hz; needs mono 16-bit at {sample_rate} Hz")
    audio = np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2").astype(np.int16)
    if samples is not None:
        audio = np.pad(audio[:samples], (0, max(0, samples - len(audio))))
    return audio


def write_clip(path: Path, audio: np.ndarray, sample_rate: int) -> None:
    """Written whole under a temporary name, then renamed: never a half-written WAV."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    with wave.open(str(partial), "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(sample_rate)
        clip.writeframes(np.asarray(audio, dtype="<i2").tobytes())
    partial.replace(path)
