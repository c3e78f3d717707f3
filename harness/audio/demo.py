"""The keyword demo set: spoken words synthesized offline with espeak-ng, in the Speech Commands
layout (1 s, 16 kHz, mono, 16-bit; labels.csv with filename and word; `_silence_` for no speech).

Each keyword is spoken by several voices, speeds and pitches, placed at a random offset in the
second at a random level, over low synthetic pink noise; "unknown" words are Speech Commands'
auxiliary words; silence clips are that noise alone. Synthetic speech, not recordings: the set
exercises the whole keyword pipeline on any machine, and its accuracies say nothing about a
model's real-world quality (docs/keyword_spotting.md).
"""

import csv
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from harness.audio.clips import read_clip, write_clip
from harness.errors import UserError

RECIPE_VERSION = "kws-demo-v1"
SYNTHETIC = "synthetic speech (espeak-ng), not Speech Commands"  # what the set is, wherever its figures appear
SAMPLE_RATE = 16000
CLIP_SAMPLES = SAMPLE_RATE
SILENCE = "_silence_"
KEYWORDS = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
OTHER_WORDS = ("house", "bird", "tree", "happy", "bed", "cat", "dog", "wow", "marvin", "sheila")
VOICES = ("en-us", "en-us+f2", "en-gb+m3", "en-gb-x-rp+f4", "en-us+m7", "en-gb-scotland+f1")
RENDITIONS_PER_KEYWORD = 6
RENDITIONS_PER_OTHER_WORD = 2
SILENCE_CLIPS = 10
SPEECH_THRESHOLD = 300  # |sample| above this counts as speech when trimming espeak's padding
SEED = 20261129


def _espeak(word: str, voice: str, speed: int, pitch: int, work: Path) -> np.ndarray:
    """The word as espeak-ng says it (22050 Hz), resampled to 16 kHz, its silent ends trimmed."""
    if shutil.which("espeak-ng") is None:
        raise UserError("the keyword demo set is spoken by espeak-ng: install it (apt-get install espeak-ng)")
    out = work / "word.wav"
    done = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", str(out), word], capture_output=True
    )
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise UserError(f"espeak-ng could not speak {word!r} with voice {voice} ({why[0]}); reinstall espeak-ng")
    from scipy.signal import resample_poly  # here: importing scipy.signal takes half a second

    audio = resample_poly(read_clip(out, 22050).astype(np.float64), 320, 441)
    loud = np.flatnonzero(np.abs(audio) > SPEECH_THRESHOLD)
    return audio[loud[0] : loud[-1] + 1] if loud.size else audio


def _pink_noise(rng: np.random.Generator, n: int) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    spectrum[1:] /= np.sqrt(np.arange(1, spectrum.size))
    noise = np.fft.irfft(spectrum, n)
    return noise / np.sqrt(np.mean(noise**2))


def _clip(rng: np.random.Generator, speech: np.ndarray | None) -> np.ndarray:
    clip = _pink_noise(rng, CLIP_SAMPLES) * 10 ** (rng.uniform(-62, -50) / 20) * 32767
    if speech is not None and np.any(speech):  # a silent rendition stays a quiet clip
        speech = speech[:CLIP_SAMPLES] / np.max(np.abs(speech)) * 10 ** (rng.uniform(-20, -3) / 20) * 32767
        start = int(rng.integers(0, CLIP_SAMPLES - len(speech) + 1))
        clip[start : start + len(speech)] += speech
    return np.clip(np.round(clip), -32768, 32767).astype(np.int16)


def build_keyword_demo(root: Path) -> None:
    """Writes root/labels.csv and root/clips/*.wav; built in a temporary folder, then renamed."""
    rng = np.random.default_rng(SEED)
    plan = [(w, RENDITIONS_PER_KEYWORD) for w in KEYWORDS] + [(w, RENDITIONS_PER_OTHER_WORD) for w in OTHER_WORDS]
    partial = root.with_name(f".{root.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "clips").mkdir(parents=True)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for word, renditions in plan:
            for take in range(renditions):
                voice = VOICES[(take + len(word)) % len(VOICES)]
                speech = _espeak(word, voice, int(rng.integers(130, 200)), int(rng.integers(25, 75)), Path(work))
                name = f"{word}_{take:02d}.wav"
                write_clip(partial / "clips" / name, _clip(rng, speech), SAMPLE_RATE)
                rows.append((name, word))
    for take in range(SILENCE_CLIPS):
        name = f"silence_{take:02d}.wav"
        write_clip(partial / "clips" / name, _clip(rng, None), SAMPLE_RATE)
        rows.append((name, SILENCE))
    with open(partial / "labels.csv", "w", newline="") as f:
        csv.writer(f).writerows([("filename", "label"), *rows])
    shutil.rmtree(root, ignore_errors=True)
    partial.replace(root)
