"""The row codec's decoder as the Cortex-M4 and M7 run it (the DSP extension's byte-wise median and sums, the
table of short codes), built alone by benchmarks/codec_instructions.py and run on QEMU: the decoded float32
tensor's CRC-32 equals the host's, for an image under every filter, noise (codes past the table, escapes) and
int8 feature rows (the median without subtract-green), in pieces of odd sizes."""

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.link import row_codec

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(
        not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
        reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
    ),
]
BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "codec_instructions.py"
ALL_FILTERS = tuple(range(len(row_codec.FILTERS)))


def _decoder_run():
    spec = importlib.util.spec_from_file_location("codec_instructions", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.measure


def _inputs() -> list[tuple[str, bytes, np.ndarray]]:
    rng = np.random.default_rng(36)
    y, x = np.mgrid[0:96, 0:96]
    image = np.stack([(x + y) % 256, (2 * x) % 256, (y * 3 + (x > 40) * 90) % 256], axis=-1).astype(np.uint8)
    image = image.ravel()
    noise = rng.integers(0, 256, 96 * 96 * 3, dtype=np.uint8)
    features = (np.sin(np.arange(49 * 40) / 7.0) * 90 + rng.integers(-6, 7, 49 * 40)).astype(np.int8)
    return [
        ("image", row_codec.encode(image, 96 * 3, 3, row_codec.OUT_WIDEN_U8, ALL_FILTERS), image),
        ("noise", row_codec.encode(noise, 96 * 3, 3, row_codec.OUT_WIDEN_U8, ALL_FILTERS), noise),
        ("features", row_codec.encode(features, 40, 1, row_codec.OUT_WIDEN_I8, ALL_FILTERS), features),
    ]


@pytest.mark.parametrize("board", ["qemu_m4", "qemu_m7"])
def test_the_decoder_on_the_cortex_m_gives_the_hosts_tensor(board, tmp_path):
    measure = _decoder_run()
    for name, stream, elements in _inputs():
        instructions, decoded, exact = measure(board, stream, elements, 97, tmp_path)
        assert (decoded, exact) == (4 * len(elements), True), name
        assert instructions > len(elements), name  # it ran: at least an instruction an element
