"""Every WAV comes through read_wav_file (issue #31): no regular file, no read; the frames present, not the
header's claim; 0 Hz refused."""

import io
import os
import struct
import wave

import numpy as np
import pytest

from harness.audio.clips import FRAMES_PER_READ, read_clip, read_wav_file
from harness.errors import UserError


def _wav(frames: int, rate: int = 16000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.arange(frames, dtype="<i2").tobytes())
    return buffer.getvalue()


def _claiming(data: bytes, frames: int) -> bytes:
    data = bytearray(data)
    data[4:8] = struct.pack("<I", 36 + 2 * frames)
    data[40:44] = struct.pack("<I", 2 * frames)
    return bytes(data)


def test_the_frames_present_count_not_the_header(tmp_path):
    path = tmp_path / "short.wav"
    path.write_bytes(_claiming(_wav(80_000), 57_600_000))  # 5 s, claiming an hour
    wav = read_wav_file(path)
    assert (wav.frames, wav.declared_frames) == (80_000, 57_600_000)
    assert "declares 57600000 frames but it holds 80000" in wav.mismatch()
    assert len(read_clip(path, 16000)) == 80_000


def test_frames_are_read_in_pieces_and_whole(tmp_path):
    path = tmp_path / "long.wav"
    path.write_bytes(_wav(FRAMES_PER_READ + 7))
    wav = read_wav_file(path)
    assert wav.frames == FRAMES_PER_READ + 7 and wav.mismatch() is None
    np.testing.assert_array_equal(np.frombuffer(wav.data, "<i2")[-7:], np.arange(FRAMES_PER_READ + 7, dtype="<i2")[-7:])


def test_a_wav_at_zero_hz_is_refused(tmp_path):
    data = bytearray(_wav(100))
    data[24:32] = struct.pack("<II", 0, 0)
    (tmp_path / "zero.wav").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="0 Hz"):
        read_wav_file(tmp_path / "zero.wav")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.wav")
    with pytest.raises(UserError, match=r"pipe\.wav is a FIFO"):
        read_wav_file(tmp_path / "pipe.wav")


def test_a_missing_wav_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_wav_file(tmp_path / "nowhere.wav")
