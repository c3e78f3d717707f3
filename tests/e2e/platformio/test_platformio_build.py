"""The generated NUCLEO-H743 project, moved to another folder, built and linked by real PlatformIO, offline.

The shared fixtures hold an offline PlatformIO core dir for nucleo_h743zi (platform ststm32 19.6.0,
stm32duino 2.12.0, CMSIS 6.3.0; Debian's arm-none-eabi toolchain) and TFLM trees generated from
upstream tflite-micro: with them `pio run` runs in the moved project exactly as on a colleague's machine,
without any registry and with nothing left where harness generated it. Both models' projects are built at
the same place with one PlatformIO build cache, so TFLM and the framework compile once (the suite's budget).
The last one is then rebuilt in place with the layer trace compiled out (HP_LAYER_TRACE 0): seconds, and smaller.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from harness.boards import get_board
from harness.firmware.elf import memory_usage
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


MODELS = (
    ("tflm_micro_speech", "tflm/micro_speech_quantized.tflite"),
    ("mlperf_tiny_vww", "mlperf_tiny/visual_wake_words.tflite"),
)


def _pio() -> str:
    beside_harness = Path(sys.executable).parent / "pio"
    return shutil.which("pio") or str(beside_harness)


def _generate(card: str, out: Path) -> Path:
    command = [sys.executable, "-m", "harness", "firmware", "generate", "--board", "nucleo_h743", "--model", card]
    command += ["--tflm", str(TREE), "--out", str(out), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return Path(json.loads(done.stdout)["project"])


def test_a_moved_copy_of_the_generated_project_builds_and_links_with_real_platformio_offline(offline_core, tmp_path):
    from tests.conftest import fixture_model

    env = os.environ | {
        "PLATFORMIO_CORE_DIR": str(offline_core),
        "PLATFORMIO_BUILD_CACHE_DIR": str(tmp_path / "build-cache"),
        "PLATFORMIO_SETTING_ENABLE_TELEMETRY": "No",
        "PLATFORMIO_SETTING_CHECK_PLATFORMIO_INTERVAL": "3650",
    }
    board = get_board("nucleo_h743")
    moved = tmp_path / "elsewhere" / "project"
    for card, model_file in MODELS:
        model = fixture_model(model_file)
        generated = tmp_path / "generated"
        project = _generate(card, generated)
        shutil.rmtree(moved, ignore_errors=True)
        shutil.copytree(project, moved)
        shutil.rmtree(generated)  # nothing of the original is left to read
        log = _pio_run(moved, env, tmp_path / f"{card}.log")
        elf = moved / ".pio" / "build" / "nucleo_h743" / "firmware.elf"
        figures = memory_usage(elf)
        assert 0 < figures["flash_bytes"] <= board.memory.flash_bytes
        assert 0 < figures["static_ram_bytes"] <= board.memory.ram_bytes
        assert _symbol_size(elf, "g_harness_model") == model.stat().st_size  # the model is in the image
        assert _fp_arch(elf).startswith("FPv5")  # the H743's double-precision FPU, not stm32duino's FPv4-SP default
        assert "tflm @ 0.0.0" in log.read_text()  # PlatformIO's dependency finder found the project's TFLM copy
        # One CMSIS per build: the framework's. The tree's own copy is never on an include path.
        assert "third_party/cmsis/CMSIS" not in (moved / "platformio.ini").read_text()
    _the_layer_trace_compiled_out_makes_a_smaller_image(moved, env, model, figures, tmp_path)


def _pio_run(project: Path, env: dict, log: Path) -> Path:
    with open(log, "w") as out:  # always bounded: offline, PlatformIO's registry calls hang
        command = ["timeout", "-k", "60", str(BUILD_SECONDS), _pio(), "run"]
        done = subprocess.run(command, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT)
    assert done.returncode == 0, f"{project}: {log.read_text()[-3000:]}"
    return log


def _the_layer_trace_compiled_out_makes_a_smaller_image(project: Path, env: dict, model: Path, traced: dict, tmp_path):
    """The last model's project again with HP_LAYER_TRACE 0, in the same folder: a rebuild of the few sources
    that include harness_build_config.h (seconds), smaller by the trace's code and no larger in RAM."""
    from harness.firmware.assemble import LayerTraceBuild
    from harness.firmware.platformio import generate_project
    from harness.firmware.tflm_tree import TflmTree
    from harness.model.tflite_file import read_tflite

    untraced = generate_project(
        get_board("nucleo_h743"),
        read_tflite(model),
        "untraced",
        TflmTree(TREE),
        tmp_path / "untraced",
        trace=LayerTraceBuild(enabled=False),
    )
    for path in project.iterdir():
        if path.name != ".pio":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    shutil.copytree(untraced.path, project, dirs_exist_ok=True)
    _pio_run(project, env, tmp_path / "untraced.log")
    figures = memory_usage(project / ".pio" / "build" / "nucleo_h743" / "firmware.elf")
    assert 0 < figures["flash_bytes"] < traced["flash_bytes"]
    assert figures["static_ram_bytes"] <= traced["static_ram_bytes"]
