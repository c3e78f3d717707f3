"""The generated NUCLEO-H743 project built and linked by real PlatformIO, offline.

The shared fixtures hold an offline PlatformIO core dir for nucleo_h743zi (platform ststm32 19.6.0,
stm32duino 2.12.0, CMSIS 6.3.0; Debian's arm-none-eabi toolchain) and TFLM trees generated from
upstream tflite-micro: with them `harness build` runs `pio run` exactly as a user's machine would,
without any registry. PlatformIO's build cache (in harness's cache) compiles TFLM once for both models.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile

from harness.boards import get_board
from tests.conftest import FIXTURE_PLATFORMIO, FIXTURE_TFLM

pytestmark = [pytest.mark.platformio, pytest.mark.slow]
CORE = FIXTURE_PLATFORMIO / "nucleo_h743zi"
TREE = FIXTURE_TFLM / "cmsis_nn"
BUILD_SECONDS = 3600  # a first build on two busy cores; a cached one takes a minute


@pytest.fixture(scope="module")
def offline_core(tmp_path_factory):
    if not CORE.is_dir() or not TREE.is_dir():
        pytest.skip("needs ../shared/fixtures/platformio/nucleo_h743zi and ../shared/fixtures/tflm/cmsis_nn")
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs Debian's gcc-arm-none-eabi (scripts/install --test installs it)")
    core = tmp_path_factory.mktemp("pio") / "core"
    shutil.copytree(CORE, core, symlinks=True)  # PlatformIO writes .cache/ into its core dir
    for path in [core, *core.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)
    return core


def _symbol_size(elf_path, name: str) -> int | None:
    with open(elf_path, "rb") as f:
        symbols = ELFFile(f).get_section_by_name(".symtab")
        found = symbols.get_symbol_by_name(name) if symbols else None
        return found[0]["st_size"] if found else None


def _fp_arch(elf_path) -> str:
    done = subprocess.run(["arm-none-eabi-readelf", "-A", str(elf_path)], capture_output=True, text=True, check=True)
    return next((line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if "Tag_FP_arch" in line), "")


@pytest.mark.parametrize(
    ("card", "model_file"),
    [
        ("mlperf_tiny_vww", "mlperf_tiny/visual_wake_words.tflite"),
        ("tflm_micro_speech", "tflm/micro_speech_quantized.tflite"),
    ],
)
def test_nucleo_project_builds_and_links_with_real_platformio_offline(card, model_file, offline_core, tmp_path):
    from tests.conftest import fixture_model

    model = fixture_model(model_file)
    env = os.environ | {"PLATFORMIO_CORE_DIR": str(offline_core), "HARNESS_PIO_TIMEOUT": str(BUILD_SECONDS)}
    command = [sys.executable, "-m", "harness", "firmware", "build", "--board", "nucleo_h743", "--model", card]
    command += ["--tflm", str(TREE), "--out", str(tmp_path), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=BUILD_SECONDS + 300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    board = get_board("nucleo_h743")
    assert 0 < record["flash_bytes"] <= board.memory.flash_bytes
    assert 0 < record["static_ram_bytes"] <= board.memory.ram_bytes
    assert record["kernels"] == "cmsis_nn" and "-mfpu=fpv5-d16" in record["flags"]
    project = tmp_path / "nucleo_h743" / record["project"].rsplit("/", 1)[-1]
    assert json.loads((project / "harness-build.json").read_text()) == record
    elf = project / ".pio" / "build" / "nucleo_h743" / "firmware.elf"
    assert _symbol_size(elf, "g_harness_model") == model.stat().st_size  # the model is in the image
    assert _fp_arch(elf).startswith("FPv5")  # the H743's double-precision FPU, not stm32duino's FPv4-SP default
    log = (project / "build.log").read_text()
    assert "tflm @ 0.0.0" in log  # PlatformIO's dependency finder found the TFLM library
    # One CMSIS per build: the framework's. The tree's own copy is never on an include path.
    assert "third_party/cmsis/CMSIS" not in (project / "platformio.ini").read_text()
