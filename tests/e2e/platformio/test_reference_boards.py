"""The MLPerf Tiny reference boards' firmware, built and linked by real PlatformIO, offline, and read back from the ELF.

The shared fixtures hold an offline PlatformIO core dir for nucleo_l4r5zi, nucleo_u575zi_q and disco_f746ng (and
nucleo_h743zi): platform ststm32 19.6.0, stm32duino 2.12.0, CMSIS 6.3.0, Debian's arm-none-eabi GCC 12.2. Every run
of this module builds each of those boards' firmware once with `harness firmware build`, for the MLPerf Tiny model
whose TFLM selection is smallest (ad01's FC autoencoder: the framework, FULLY_CONNECTED and what it calls), and
checks flash and RAM against the board file, the model in the image, the CPU and FPU the ELF says, and that no
double-precision instruction reached a single-precision FPU. nucleo_h7a3zi_q is not in the core: its project
(with its own board definition) is built as far as the core allows, and the test holds the reason it stops.

The whole matrix (these boards x the four reference models, each board's models built one after the other at one
place so TFLM's shared sources and the framework come from PlatformIO's build cache) is marked platformio_matrix and
runs with HARNESS_PIO_MATRIX=1 (docs/testing.md); docs/boards.md holds its figures.
"""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from harness.boards import FPUS, get_board
from harness.firmware.elf import memory_usage
from harness.firmware.fpu_check import FP_ARCH_NAMES, fp_attributes
from tests.conftest import FIXTURE_MODELS, FIXTURE_PLATFORMIO, FIXTURE_TFLM

pytestmark = [pytest.mark.platformio, pytest.mark.slow]
CORE = FIXTURE_PLATFORMIO / "stm32_reference"
TREE = FIXTURE_TFLM / "cmsis_nn"
REFERENCE = FIXTURE_MODELS / "mlperf_tiny_reference"
BUILD_SECONDS = 3600  # a first build on two busy cores takes minutes; never let a registry call hang the suite
# The four MLPerf Tiny reference models, smallest TFLM selection first: (card, the fixture's file).
MODELS = (
    ("mlperf_tiny_ad01", "ad01_int8.tflite"),
    ("mlperf_tiny_kws01", "kws_ref_model.tflite"),
    ("mlperf_tiny_ic01", "pretrainedResnet_quant.tflite"),
    ("mlperf_tiny_vww01", "vww_96_int8.tflite"),
)
BUILT = ("nucleo_l4r5zi", "nucleo_u575zi_q", "disco_f746ng")  # the boards the fixture core builds
# Tag_CPU_arch (Arm build attributes): what -mcpu each board file's core compiles for.
CPU_ARCH = {"cortex-m4": 13, "cortex-m7": 13, "cortex-m33": 17}  # v7E-M, v8-M.mainline
VFPV4_D16, FPV5_D16, SP_ONLY = 6, 8, 1
# Tag_FP_arch of an image linked with stm32duino's -mfpu=fpv4-sp-d16: the merged attribute is the highest of its
# objects', and GCC's Cortex-M33 libraries (thumb/v8-m.main+fp) are built for FPv5-SP: single precision either way.
FP_ARCH = {"cortex-m4": VFPV4_D16, "cortex-m7": VFPV4_D16, "cortex-m33": FPV5_D16}
# GCC's multilib folder for -mcpu=<core> -mfpu=fpv4-sp-d16 -mfloat-abi=hard: the C, maths and GCC libraries the link
# must take (without -mfpu the Cortex-M7 link takes thumb/v7e-m+dp/hard, double precision).
MULTILIB = {
    "cortex-m4": "thumb/v7e-m+fp/hard",
    "cortex-m7": "thumb/v7e-m+fp/hard",
    "cortex-m33": "thumb/v8-m.main+fp/hard",
}


@pytest.fixture(scope="module")
def pio_env(tmp_path_factory):
    """One writable copy of the offline core and one build cache for the whole module."""
    if not CORE.is_dir() or not TREE.is_dir() or not REFERENCE.is_dir():
        pytest.skip(
            "needs ../shared/fixtures/platformio/stm32_reference, ../shared/fixtures/tflm/cmsis_nn and "
            "../shared/fixtures/models/mlperf_tiny_reference"
        )
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs Debian's gcc-arm-none-eabi (scripts/install --test installs it)")
    work = tmp_path_factory.mktemp("pio-reference")
    core = work / "core"
    shutil.copytree(CORE, core, symlinks=True)  # PlatformIO writes .cache/ into its core dir
    for path in [core, *core.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)
    return os.environ | {
        "PLATFORMIO_CORE_DIR": str(core),
        "PLATFORMIO_BUILD_CACHE_DIR": str(work / "build-cache"),
        "PLATFORMIO_SETTING_ENABLE_TELEMETRY": "No",
        "PLATFORMIO_SETTING_CHECK_PLATFORMIO_INTERVAL": "3650",
        "HARNESS_PIO_TIMEOUT": str(BUILD_SECONDS),
    }


def _harness(*args, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env, timeout=BUILD_SECONDS + 600
    )


def _symbol_size(elf: Path, name: str) -> int | None:
    with open(elf, "rb") as f:
        symbols = ELFFile(f).get_section_by_name(".symtab")
        found = symbols.get_symbol_by_name(name) if symbols else None
        return found[0]["st_size"] if found else None


def _cpu_arch(elf: Path) -> int:
    with open(elf, "rb") as f:
        section = ELFFile(f).get_section_by_name(".ARM.attributes")
        for subsection in section.iter_subsections():
            for subsubsection in subsection.iter_subsubsections():
                for attribute in subsubsection.iter_attributes():
                    if attribute.tag == "TAG_CPU_ARCH":
                        return attribute.value
    return -1


def _check_image(board_id: str, record: dict, elf: Path, model: Path) -> None:
    """What the ELF holds, against the board file: the footprint, the model, the CPU and the FPU."""
    board = get_board(board_id)
    usage = memory_usage(elf)
    assert {key: record[key] for key in usage} == usage  # the record's figures are the ELF's
    assert 0 < record["flash_bytes"] <= board.memory.flash_bytes
    assert 0 < record["static_ram_bytes"] <= board.memory.ram_bytes
    assert _symbol_size(elf, "g_harness_model") == model.stat().st_size  # the model is in the image
    assert _cpu_arch(elf) == CPU_ARCH[board.core]
    fp_arch, hardfp_use = fp_attributes(elf)
    # stm32duino's -mfpu=fpv4-sp-d16 when compiling and when linking (no board file here swaps it): single precision.
    assert (fp_arch, hardfp_use) == (FP_ARCH[board.core], SP_ONLY)
    linked = set(
        re.findall(
            r"/lib/(?:gcc/arm-none-eabi/[\d.]+/)?(thumb/[^/ ]+/[^/ ]+)/lib\w+\.a", elf.with_suffix(".map").read_text()
        )
    )
    assert linked == {MULTILIB[board.core]}, linked  # the libraries the linker took, from stm32duino's map file
    assert record["fpu"] == {
        "fpu": board.fpu,
        "fp_arch": FP_ARCH_NAMES[FP_ARCH[board.core]],
        "hardfp_use": "SP only",
        "double_instructions": 0,
    }


def _flag_lists(dump: str) -> dict[str, list[str]]:
    """The flag lists of `pio run -t envdump`'s SCons environment (a pretty-printed dict): name -> its strings."""
    found = {}
    for match in re.finditer(r"^  '([A-Z]+FLAGS)': (\[.*?\])", dump, re.MULTILINE | re.DOTALL):
        found[match.group(1)] = re.findall(r"'([^']*)'", match.group(2))
    return found


@pytest.mark.parametrize("board_id", (*BUILT, "nucleo_h7a3zi_q", "nucleo_h743"))
def test_compile_and_link_fpu_flags_as_the_core_gives_them(pio_env, tmp_path, board_id):
    """The flags PlatformIO and stm32duino really give each compile and the link (`pio run -t envdump` runs every
    build script, the project's link_flags.py included, and compiles nothing): one -mfpu for both, the same, one the
    board's FPU runs. The H7A3's project is taken with its own board definition."""
    board = get_board(board_id)
    command = ["firmware", "generate", "--board", board_id, "--model", MODELS[0][0]]
    command += ["--model-file", str(REFERENCE / MODELS[0][1]), "--tflm", str(TREE), "--out", str(tmp_path), "--json"]
    done = _harness(*command, env=pio_env)
    assert done.returncode == 0, done.stderr
    project = Path(json.loads(done.stdout)["project"])
    dump = subprocess.run(
        ["timeout", "-k", "30", "600", _pio(), "run", "-t", "envdump"],
        cwd=project,
        env=pio_env,
        capture_output=True,
        text=True,
    )
    assert dump.returncode == 0, dump.stdout[-3000:] + dump.stderr[-3000:]
    flags = _flag_lists(dump.stdout)
    compiled = [f for f in flags["CCFLAGS"] if f.startswith("-mfpu=")]
    linked = [f for f in flags["LINKFLAGS"] if f.startswith("-mfpu=")]
    assert compiled and linked and compiled[-1] == linked[-1], (compiled, linked)
    version, double = FPUS[compiled[-1].removeprefix("-mfpu=")]
    assert version <= FPUS[board.fpu][0] and double <= FPUS[board.fpu][1]
    assert f"-mcpu={board.core}" in flags["CCFLAGS"] and f"-mcpu={board.core}" in flags["LINKFLAGS"]
    assert "-mfloat-abi=hard" in flags["LINKFLAGS"]


def _pio() -> str:
    return shutil.which("pio") or str(Path(sys.executable).parent / "pio")


@pytest.mark.parametrize("board_id", BUILT)
def test_the_reference_board_builds_the_smallest_mlperf_tiny_model_offline(pio_env, tmp_path, board_id):
    card, file = MODELS[0]
    model = REFERENCE / file
    command = ["firmware", "build", "--board", board_id, "--model", card, "--model-file", str(model)]
    started = time.monotonic()
    done = _harness(*command, "--tflm", str(TREE), "--out", str(tmp_path / "build"), env=pio_env)
    assert done.returncode == 0, done.stderr[-3000:]
    (project,) = (tmp_path / "build" / board_id).iterdir()
    record = json.loads((project / "harness-build.json").read_text())  # what `harness eval` reads back
    elf = project / ".pio" / "build" / board_id / "firmware.elf"
    _check_image(board_id, record, elf, model)
    board = get_board(board_id)
    said = f"flash {record['flash_bytes']:,} of {board.memory.flash_bytes:,} B, static RAM "
    assert said in done.stdout, done.stdout
    said = f"FPU {FP_ARCH_NAMES[FP_ARCH[board.core]]}, SP only, 0 double-precision instructions (board: {board.fpu})"
    assert said in done.stdout, done.stdout
    print(
        f"{board_id} {card}: flash {record['flash_bytes']} B, RAM {record['static_ram_bytes']} B, "
        f"{time.monotonic() - started:.0f} s"
    )


def test_nucleo_h7a3zi_q_gets_its_board_definition_and_stops_where_the_core_lacks_its_variant(pio_env, tmp_path):
    """platform-ststm32 19.6.0 has no nucleo_h7a3zi_q: the project carries boards/nucleo_h7a3zi_q.json, so PlatformIO
    takes the board and stm32duino starts on it; the fixture core then lacks the H7A3 variant folder (and its CMSIS
    device header), and the build stops there, saying so. With a core that has them, it must build."""
    board = get_board("nucleo_h7a3zi_q")
    card, file = MODELS[0]
    command = ["firmware", "build", "--board", board.id, "--model", card, "--model-file", str(REFERENCE / file)]
    done = _harness(*command, "--tflm", str(TREE), "--out", str(tmp_path / "build"), "--json", env=pio_env)
    variant = Path(pio_env["PLATFORMIO_CORE_DIR"]) / "packages" / "framework-arduinoststm32" / "variants"
    variant = variant / board.platformio.board_definition.variant
    if variant.is_dir():  # a core with the H7A3 variant: it must build, for the H7's double-precision FPU
        assert done.returncode == 0, done.stderr[-3000:]
        record = json.loads(done.stdout)
        assert record["fpu"]["fp_arch"].startswith("FPv5") and record["fpu"]["hardfp_use"] != "SP only"
        return
    assert done.returncode != 0
    log = (next((tmp_path / "build" / board.id).iterdir()) / "build.log").read_text()
    assert "Unknown board ID" not in log  # the board definition was taken:
    assert "PLATFORM: ST STM32 (19.6.0) > ST Nucleo H7A3ZI-Q" in log
    assert "HARDWARE: STM32H7A3ZIT6Q 280MHz, 1MB RAM, 2MB Flash" in log
    assert "Warning! Cannot find linker script for the current target!" in log  # stm32duino: no variant folder
    assert "variant_NUCLEO_H7A3ZI_Q.h: No such file or directory" in log, log[-3000:]
    assert "PlatformIO build/upload failed" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.platformio_matrix
@pytest.mark.skipif(os.environ.get("HARNESS_PIO_MATRIX") != "1", reason="the whole matrix: set HARNESS_PIO_MATRIX=1")
@pytest.mark.parametrize("board_id", BUILT)
def test_every_reference_model_builds_on_the_reference_board(pio_env, tmp_path, board_id):
    """The board's four models one after the other at one place (the project's TFLM library then has one path, so
    what the models share comes from the build cache); each image checked as above, the figures printed."""
    from harness.firmware.platformio import build, generate_project
    from harness.firmware.tflm_tree import TflmTree
    from harness.model.tflite_file import read_tflite

    board = get_board(board_id)
    place = tmp_path / "project"
    figures = []
    with pytest.MonkeyPatch.context() as patch:
        for name in ("PLATFORMIO_CORE_DIR", "PLATFORMIO_BUILD_CACHE_DIR", "HARNESS_PIO_TIMEOUT"):
            patch.setenv(name, pio_env[name])
        for card, file in MODELS:
            model = REFERENCE / file
            project = generate_project(board, read_tflite(model), card, TflmTree(TREE), tmp_path / "generated")
            for path in place.iterdir() if place.is_dir() else ():
                if path.name != ".pio":
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
            shutil.copytree(project.path, place, dirs_exist_ok=True)
            shutil.rmtree(tmp_path / "generated")
            started = time.monotonic()
            record = build(dataclasses.replace(project, path=place))
            seconds = time.monotonic() - started
            _check_image(board_id, record, place / ".pio" / "build" / board_id / "firmware.elf", model)
            figures.append(
                f"{board_id} {card}: flash {record['flash_bytes']} B, RAM {record['static_ram_bytes']} B, "
                f"{seconds:.0f} s"
            )
    print("\n".join(figures))
