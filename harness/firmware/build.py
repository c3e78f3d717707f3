"""Build our ARM firmware for a bare-metal (QEMU) board: render the firmware's assembly (assemble.py) as a
Makefile project with its linker script, and run make.

Builds are cached by their build id, a fingerprint of everything that goes into them (assemble.py), here
also the TFLM library's folder (the Makefile names it) and the compiler's version.
"""

import fcntl
import hashlib
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from harness.boards import Board
from harness.errors import BuildError, UserError
from harness.firmware.assemble import (
    COMPILED_SUFFIXES,
    DEFAULT_TRACE,
    Assembly,
    LayerTraceBuild,
    firmware_dir,
    staged,
    write_files,
)
from harness.firmware.eembc_dut import EembcDutBuild
from harness.firmware.elf import memory_usage
from harness.firmware.tflm_tree import TflmTree
from harness.model.tflite_file import TfliteModel
from harness.paths import cache_dir

TOOLCHAIN = "arm-none-eabi-"
BUILD_TIMEOUT_SECONDS = 3600
# No framework here: harness sets what a PlatformIO framework would (size, sections for --gc-sections, dialects).
COMMON_FLAGS = "-Os -g -ffunction-sections -fdata-sections"
C_FLAGS = "-std=c11 -Wall -Wextra"
CXX_FLAGS = "-std=c++17 -fno-rtti -fno-exceptions -fno-threadsafe-statics -Wall"


@dataclass(frozen=True)
class FirmwareBuild:
    board: Board
    build_id: str
    directory: Path
    has_model: bool
    kernels: str  # "reference", "cmsis_nn", or "none" for self-test firmware
    compiler: str
    flags: str  # what every firmware source is compiled with, besides include paths
    tflm: dict | None  # the TFLM tree and how its library was built

    @property
    def elf(self) -> Path:
        return self.directory / "firmware.elf"

    def provenance(self) -> dict:
        """What a result needs to say about the firmware that produced it."""
        return {
            "build_id": self.build_id,
            "kernels": self.kernels,
            "compiler": self.compiler,
            "flags": self.flags,
            "tflm": self.tflm,
            "makefile": str(self.directory / "Makefile"),
            **memory_usage(self.elf),
        }


def _compiler_version() -> str:
    compiler = shutil.which(TOOLCHAIN + "gcc")
    if compiler is None:
        raise UserError(
            f"{TOOLCHAIN}gcc not found: install Debian's gcc-arm-none-eabi, libnewlib-arm-none-eabi and "
            "libstdc++-arm-none-eabi-newlib (`scripts/install --test` does it as root)"
        )
    return subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def _object_name(source: Path) -> str:
    return "obj/" + hashlib.sha1(str(source).encode()).hexdigest()[:10] + "_" + source.stem + ".o"


def _build_files(firmware: Assembly, library: Path | None, build_id: str) -> dict[str, bytes]:
    """The Makefile and the linker script. The firmware sources stay where they are; the generated ones are
    beside the Makefile, named relative to it."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # here: only a build renders templates

    board, fw = firmware.board, firmware.board.firmware
    templates = Environment(loader=FileSystemLoader(firmware_dir() / "templates"), undefined=StrictUndefined)
    includes = [*firmware.include_dirs, Path("."), *(firmware.tflm.include_dirs if library else [])]
    generated = [Path(name) for name in firmware.generated(build_id) if name.endswith(COMPILED_SUFFIXES)]
    link = templates.get_template("link.ld.j2").render(
        board_id=board.id,
        code_origin=fw.code_origin,
        code_length=board.memory.flash_bytes,
        ram_origin=fw.ram_origin,
        ram_length=board.memory.ram_bytes,
        stack_bytes=fw.stack_bytes,
    )
    makefile = templates.get_template("Makefile.j2").render(
        board_id=board.id,
        build_id=build_id,
        toolchain=TOOLCHAIN,
        cpu_flags=fw.cpu_flags,
        common_flags=COMMON_FLAGS,
        c_flags=C_FLAGS,
        cxx_flags=CXX_FLAGS,
        defines=" ".join(firmware.defines),
        includes=" ".join(f"-I{path}" for path in includes),
        libraries=str(library or ""),
        objects=[(str(source), _object_name(source)) for source in [*firmware.compiled, *generated]],
    )
    return {"link.ld": link.encode(), "Makefile": makefile.encode()}


def build_firmware(
    board: Board,
    model: TfliteModel | None = None,
    tflm: TflmTree | None = None,
    frontend: TfliteModel | None = None,
    trace: LayerTraceBuild = DEFAULT_TRACE,
    dut: EembcDutBuild | None = None,
) -> FirmwareBuild:
    """The firmware for `board`: with a TFLM model runner when model and tree are given, else
    self-test; with `frontend` (an audio frontend model) it also streams keywords; `trace` says whether
    it can trace layers (and for a test build, which operator it perturbs); `dut`: an MLPerf Tiny / EEMBC
    DUT instead of harness's protocol (eembc_dut.py)."""
    with _BUILDING:  # several QEMU boards of one run start together: one builds, the others find it built
        return _build_firmware(board, model, tflm, frontend, trace, dut)


_BUILDING = threading.Lock()


def _build_firmware(
    board: Board,
    model: TfliteModel | None,
    tflm: TflmTree | None,
    frontend: TfliteModel | None,
    trace: LayerTraceBuild,
    dut: EembcDutBuild | None,
):
    if not board.builds_firmware:
        raise UserError(f"board {board.id} has no firmware to build")
    firmware = Assembly(board, model, tflm, frontend, bare_metal=True, trace=trace, dut=dut)
    compiler = _compiler_version()
    library = None
    if model is not None:
        library = tflm.library(board, TOOLCHAIN, firmware.operators)
    build_id = firmware.build_id(lambda build_id: _build_files(firmware, library, build_id), compiler)
    final = cache_dir() / "firmware" / build_id
    flags = " ".join([board.firmware.cpu_flags, COMMON_FLAGS, *firmware.defines])
    tflm_info = {"tree": str(tflm.root), "fingerprint": tflm.fingerprint, "library": str(library)} if library else None
    result = FirmwareBuild(board, build_id, final, model is not None, firmware.kernels, compiler, flags, tflm_info)
    if result.elf.is_file():
        return result
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f"{build_id}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two harness processes never build one firmware at once
        if not result.elf.is_file():  # the other built it while this one waited
            _make(firmware, library, build_id, final, board)
    return result


def _make(firmware: Assembly, library: Path | None, build_id: str, final: Path, board: Board) -> None:
    with staged(final) as project:
        write_files(project, {**firmware.generated(build_id), **_build_files(firmware, library, build_id)})
        log = project / "build.log"
        with open(log, "w") as out:
            done = subprocess.run(
                ["make", "-j2"], cwd=project, stdout=out, stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_SECONDS
            )
        if done.returncode != 0:
            errors = [line for line in log.read_text().splitlines() if "error" in line.lower()]
            raise BuildError(
                f"firmware for {board.id} did not build ({(errors or ['see log'])[0].strip()}); log: {log}"
            )
