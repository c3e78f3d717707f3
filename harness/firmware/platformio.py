"""PlatformIO projects for real boards: generate one per (board, model), build and upload it with `pio`.

The project's src/ holds the firmware's assembly (assemble.py) — its sources as they are and the files
generated for it; this module adds platformio.ini (and for ESP-IDF the CMake project), a README and, for a
TFLM tree, the sources of the tree this firmware compiles as a PlatformIO library in lib/tflm. TFLM comes
from the board file's choice (a pinned library, an ESP-IDF component) or from `--tflm PATH`. A project
names no path outside its folder: moved or archived (project_archive.py), it builds with `pio run`.
"""

import dataclasses
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import __version__, reading
from harness.boards import Board, board_ids
from harness.errors import BuildError, UserError
from harness.extras import install_hint, require
from harness.firmware.assemble import (
    COMPILED_SUFFIXES,
    DEFAULT_TRACE,
    Assembly,
    LayerTraceBuild,
    firmware_dir,
    staged,
    write_files,
)
from harness.firmware.build_runs import BuildFailed, run_build
from harness.firmware.eembc_dut import EembcDutBuild
from harness.firmware.elf import memory_usage
from harness.firmware.fpu_check import check_firmware_fpu
from harness.firmware.tflm_tree import TflmTree
from harness.model.tflite_file import TfliteModel
from harness.model.tflm import arena_used_bytes, make_interpreter
from harness.names import is_valid_id
from harness.paths import cache_dir

# The frameworks build for size: the firmware and the TFLM library (build_flags reach it too) get -O2 instead.
OPTIMIZATION = "-O2"
UNFLAGS = ["-Os"]
# C++17 for what needs it (TFLM's tree, harness's runner): src/ and the tflm library only. The framework keeps
# its own standard: the mbed core's Arduino.h defines an abs() macro that breaks C++17's <chrono>.
CXX_STD = "-std=gnu++17"
ARENA_MARGIN = 1.25  # the host's 64-bit figure is an estimate; 32-bit devices need a little less
ARENA_SLACK_BYTES = 4096
UPLOAD_TIMEOUT_SECONDS = 1800
BUILD_RECORD = "harness-build.json"
LINK_SCRIPT = "link_flags.py"  # the project's post-build script adding platformio.link_flags to the link
FRAMEWORK_SOURCES = 210  # what stm32duino adds to a build (measured: 209); only for the progress bar


@dataclass(frozen=True)
class PioProject:
    board: Board
    path: Path
    env: str
    build_id: str
    model_sha256: str
    kernels: str
    flags: list[str]
    source_count: int  # files PlatformIO compiles besides the framework's: the progress estimate


def arena_for(model: TfliteModel, board: Board) -> int:
    """The arena to configure: the TFLM host interpreter's figure plus a margin, within the board's limit."""
    limit = board.firmware.arena_bytes
    used = arena_used_bytes(make_interpreter(model.data, max(limit, 8 << 20))) or limit
    wanted = (int(used * ARENA_MARGIN) + ARENA_SLACK_BYTES + 1023) // 1024 * 1024
    if used > limit:
        raise UserError(
            f"{model.path.name} needs about {used} bytes of arena (host estimate) and {board.id} allows {limit}: "
            "choose a smaller model or raise [firmware] arena_bytes if the board has the RAM"
        )
    return min(wanted, limit)


TFLM_LIBRARY = "lib/tflm"  # the project's own copy of TFLM: PlatformIO's lib/ folder finds it
_COMPILED = (".c", ".cc", ".cpp", ".cxx", ".S", ".s")


def tflm_library_files(tflm: TflmTree, operators: list[str]) -> tuple[dict[str, Path], bytes]:
    """The project's TFLM library: (its path in the project -> the tree's file, its library.json).

    Every file of the tree but the sources this firmware does not compile (sources_for chose them: the framework,
    its operators' kernels, the CMSIS-NN files they reach) and the tree's CMSIS Core (the framework brings its
    own: one build sees one CMSIS). PlatformIO compiles every source in the library's folder."""
    chosen = set(tflm.sources_for(operators))
    cmsis_core = tflm.root / "third_party" / "cmsis"
    files = {}
    for path in sorted(p for p in tflm.root.rglob("*") if p.is_file()):
        if (path.suffix in _COMPILED and path not in chosen) or path.is_relative_to(cmsis_core):
            continue
        files[f"{TFLM_LIBRARY}/{path.relative_to(tflm.root).as_posix()}"] = path
    manifest = {
        "name": "tflm",
        "version": "0.0.0",
        "description": f"TFLM tree {tflm.fingerprint} ({tflm.kernels} kernels): the sources this firmware needs",
        "build": {"srcDir": ".", "includeDir": ".", "flags": [CXX_STD], "libArchive": True},
    }
    return files, (json.dumps(manifest, indent=2) + "\n").encode()


def _project_include(tflm: TflmTree, folder: Path) -> str:
    """An include folder of the tree as the project's copy has it, relative to wherever the project is."""
    relative = folder.relative_to(tflm.root).as_posix()
    return "-I${PROJECT_DIR}/" + TFLM_LIBRARY + ("" if relative == "." else f"/{relative}")


def _flags(firmware: Assembly) -> dict[str, list[str]]:
    """platformio.ini's flags and what the firmware's own sources are really compiled with (for the record)."""
    pio, defines = firmware.board.platformio, firmware.defines
    flags = [OPTIMIZATION, *defines, *(f for f in pio.build_flags if f not in defines)]
    if firmware.tflm_source == "tree":
        # The framework brings CMSIS Core: the tree's copy stays out, so one build sees one CMSIS.
        flags += [_project_include(firmware.tflm, path) for path in firmware.tflm.framework_include_dirs]
    if pio.framework == "espidf":
        # PlatformIO's espidf builder applies build_flags and build_unflags to every IDF component, where they lose
        # to each component's own flags (-Og and -std=gnu++2b come later on the command line) or do harm
        # (unflagging -std=gnu++14 leaves esp-tflite-micro at its earlier -std=c++11, which it does not compile
        # under). There the optimisation is the sdkconfig's choice (-O2) and the defines are the app's CMake's.
        app_defines = [f for f in flags if f.startswith("-D")]
        return {
            "unflags": list(pio.build_unflags),
            "flags": [f for f in pio.build_flags if not f.startswith("-D")],
            "src_flags": [],
            "app_defines": app_defines,
            "compiled_with": [OPTIMIZATION, *app_defines],
        }
    return {
        "unflags": [*UNFLAGS, *pio.build_unflags],
        "flags": flags,
        "src_flags": [CXX_STD],
        "compiled_with": [CXX_STD, *flags],
    }


def board_json(board: Board) -> str:
    """The PlatformIO board JSON of a board the pinned platform lacks (the board file's
    [platformio.board_definition]), laid out as the platform's own: its limits are the board file's [memory]."""
    pio, definition = board.platformio, board.platformio.board_definition
    build = {"cpu": definition.cpu, "extra_flags": definition.extra_flags, "f_cpu": f"{definition.f_cpu}L"}
    build |= {"mcu": definition.mcu, "product_line": definition.product_line, "variant": definition.variant}
    if definition.core:
        build["core"] = definition.core
    debug = {"default_tools": [pio.upload_protocol], "onboard_tools": [pio.upload_protocol]}
    debug |= {k: v for k in ("jlink_device", "openocd_target", "svd_path") if (v := getattr(definition, k))}
    data = {
        "build": dict(sorted(build.items())),
        "debug": debug,
        "frameworks": list(definition.frameworks),
        "name": definition.name,
        "upload": {
            "maximum_ram_size": board.memory.ram_bytes,
            "maximum_size": board.memory.flash_bytes,
            "protocol": pio.upload_protocol,
            "protocols": list(definition.upload_protocols),
        },
    }
    data |= {k: v for k in ("url", "vendor") if (v := getattr(definition, k))}
    return json.dumps(data, indent=2) + "\n"


def _build_files(firmware: Assembly, build_id: str, card_name: str = "", version: str = "") -> dict[str, bytes]:
    """platformio.ini, and for ESP-IDF the CMake project, its main component and the sdkconfig defaults. The card
    name and harness's version only label the project (comments)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # here: only a project renders templates

    board, pio, source = firmware.board, firmware.board.platformio, firmware.tflm_source
    folder = firmware_dir() / "templates" / "platformio"
    templates = Environment(loader=FileSystemLoader(folder), undefined=StrictUndefined, keep_trailing_newline=True)
    flags = _flags(firmware)
    lib_deps = []
    if source == "tree":
        lib_deps = ["tflm"]  # named: the dependency finder ties no header outside the library's folder to it
    elif source == "lib_deps":
        lib_deps = list(pio.lib_deps)
    context = dict(
        version=version,
        board_id=board.id,
        build_id=build_id,
        model=card_name,
        env=board.id,
        platform=pio.platform,
        pio_board=pio.board,
        framework=pio.framework,
        upload_protocol=pio.upload_protocol,
        baudrate=firmware.dut.baud if firmware.dut else board.link.baudrate,  # the DUT's own rate (eembc_dut.py)
        unflags=flags["unflags"],
        flags=flags["flags"],
        src_flags=flags["src_flags"],
        lib_deps=lib_deps,
        tflm_library=TFLM_LIBRARY if source == "tree" else "",
        link_flags=list(pio.link_flags),
        link_script=LINK_SCRIPT if pio.link_flags else "",
        board_definition=pio.board_definition is not None,
    )
    files = {
        "platformio.ini": templates.get_template("platformio.ini.j2").render(**context),
        "README.md": templates.get_template("README.md.j2").render(**context),
    }
    if pio.link_flags:
        files[LINK_SCRIPT] = templates.get_template("link_flags.py.j2").render(**context)
    if pio.board_definition:
        files[f"boards/{pio.board}.json"] = board_json(board)
    if pio.framework == "espidf":
        files["CMakeLists.txt"] = templates.get_template("CMakeLists.txt.j2").render(**context)
        files["src/CMakeLists.txt"] = templates.get_template("src_CMakeLists.txt.j2").render(
            defines=flags["app_defines"]
        )
        files["sdkconfig.defaults"] = (folder / "sdkconfig.defaults").read_text()
        if source == "idf_component":
            files["src/idf_component.yml"] = templates.get_template("idf_component.yml.j2").render(
                components=pio.idf_components
            )
    return {name: text.encode() for name, text in files.items()}


def generate_project(
    board: Board,
    model: TfliteModel,
    card_name: str,
    tflm: TflmTree | None = None,
    out_root: Path = Path("build"),
    frontend: TfliteModel | None = None,
    trace: LayerTraceBuild = DEFAULT_TRACE,
    dut: EembcDutBuild | None = None,
) -> PioProject:
    """The PlatformIO project for `board` running `model` (and, for keyword streaming, `frontend`); `trace` says
    whether its firmware can trace layers (docs/debug.md), as for build.build_firmware; `dut`: an MLPerf Tiny
    / EEMBC DUT instead of harness's protocol (eembc_dut.py)."""
    if board.platformio is None:  # a device board's own table
        raise UserError(f"{board.id} is not a PlatformIO board; valid: {', '.join(board_ids(platformio=True))}")
    firmware = Assembly(board, model, tflm, frontend, bare_metal=False, trace=trace, dut=dut)
    # A real board's arena is sized to the model: its RAM holds the framework's data too.
    firmware = dataclasses.replace(firmware, arena_bytes=arena_for(model, board))
    library, manifest = tflm_library_files(tflm, firmware.operators) if firmware.tflm_source == "tree" else ({}, b"")
    # The labels are left out of the id (no firmware change); the TFLM copy is in by its tree and its file list.
    build_id = firmware.build_id(lambda no_id: _build_files(firmware, no_id), manifest.decode(), *library)
    # Every firmware file is copied into src/, as the project's own sources; TFLM's into lib/tflm.
    files = {f"src/{path.name}": path.read_bytes() for path in firmware.sources}
    files |= {f"src/{name}": data for name, data in firmware.generated(build_id).items()}
    files |= _build_files(firmware, build_id, card_name, __version__)
    if library:
        files[f"{TFLM_LIBRARY}/library.json"] = manifest
    target = out_root / board.id / model.sha256[:12]
    with staged(target) as partial:
        write_files(partial, files)
        for name, source in library.items():
            (partial / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, partial / name)
    compiled = sum(name.endswith(COMPILED_SUFFIXES) for name in [*files, *library] if name.startswith(("src/", "lib/")))
    return PioProject(
        board,
        target,
        board.id,
        build_id,
        model.sha256,
        firmware.kernels,
        _flags(firmware)["compiled_with"],
        compiled + FRAMEWORK_SOURCES,
    )


def lint(project: PioProject) -> dict:
    """PlatformIO's own offline check of platformio.ini: {"errors": [...], "warnings": [...]}."""
    ProjectConfig = require("platformio.project.config", "checking a PlatformIO project").ProjectConfig
    return ProjectConfig.lint(str(project.path / "platformio.ini"))


def _pio_environment() -> dict:
    """PlatformIO asks no one and shares compiled objects between projects (the TFLM library above all).
    PLATFORMIO_CORE_DIR, when set, names a prepared core dir: how an air-gapped lab builds."""
    return os.environ | {
        "PLATFORMIO_SETTING_ENABLE_TELEMETRY": "No",
        "PLATFORMIO_SETTING_CHECK_PLATFORMIO_INTERVAL": "3650",
        "PLATFORMIO_BUILD_CACHE_DIR": os.environ.get(
            "PLATFORMIO_BUILD_CACHE_DIR", str(cache_dir() / "platformio-build-cache")
        ),
    }


def _pio_executable() -> str:
    """HARNESS_PIO if set, else `pio` on PATH, else the PlatformIO installed with harness."""
    chosen = os.environ.get("HARNESS_PIO")
    if chosen:
        if not (shutil.which(chosen) or Path(chosen).is_file()):
            raise UserError(f"PlatformIO not found at HARNESS_PIO={chosen}: point it at a `pio` executable or unset it")
        return chosen
    beside_harness = Path(sys.executable).parent / "pio"
    found = shutil.which("pio") or (str(beside_harness) if beside_harness.is_file() else None)
    if found is None:
        raise UserError(f"building for a real board needs {install_hint('platformio')} (its `pio` on PATH)")
    return found


def _run_pio(project: PioProject, targets: list[str], port: str | None, timeout: int | None, log_name: str) -> Path:
    """`pio run` for the project, bounded in time: PlatformIO's registry calls hang rather than fail."""
    timeout = timeout or int(os.environ.get("HARNESS_PIO_TIMEOUT", str(UPLOAD_TIMEOUT_SECONDS)))
    command = [_pio_executable(), "run", "-d", str(project.path), "-e", project.env, *targets]
    if port:
        command += ["--upload-port", port]
    log = project.path / log_name
    try:
        run_build(
            command,
            project.path,
            log,
            what=f"the {project.board.id} firmware with PlatformIO ({'upload' if targets else 'build'})",
            label=f"building {project.board.id} firmware",
            sources=project.source_count,
            compile_markers=("Compiling ",),
            timeout=timeout,
            env=_pio_environment(),
        )
    except BuildFailed as failed:
        if failed.timed_out:
            raise BuildError(
                f"PlatformIO did not finish within {timeout} s (offline, its registry calls hang); log: {log}"
            ) from None
        raise BuildError(f"PlatformIO build/upload failed ({failed.last_error[:200]}); log: {log}") from None
    return log


def build(project: PioProject, timeout: int | None = None) -> dict:
    """`pio run`: compile and link the project; returns the build record (flash and RAM from the ELF, the FPU it
    needs), refusing firmware that does not fit the board or needs an FPU the board does not have."""
    _run_pio(project, [], None, timeout, "build.log")
    record = _record_build(project)
    if "flash_bytes" not in record:
        raise BuildError(f"PlatformIO reported success but left no firmware.elf; log: {project.path / 'build.log'}")
    memory = project.board.memory
    for figure, limit in (("flash_bytes", memory.flash_bytes), ("static_ram_bytes", memory.ram_bytes)):
        if record[figure] > int(limit):
            raise BuildError(
                f"the {project.board.id} firmware needs {record[figure]} bytes of {figure.split('_')[-2]} and the "
                f"board has {limit}: choose a smaller model or lower [firmware] arena_bytes"
            )
    fpu = check_firmware_fpu(project.path / ".pio" / "build" / project.env / "firmware.elf", project.board)
    if fpu:  # the FPU the image needs, read from the ELF, against the board's
        record["fpu"] = fpu
        (project.path / BUILD_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return record


def upload(project: PioProject, port: str | None, timeout: int | None = None) -> Path:
    """`pio run -t upload` for the project (it builds first); returns its log."""
    log = _run_pio(project, ["-t", "upload"], port, timeout, "upload.log")
    _record_build(project)
    return log


def _record_build(project: PioProject) -> dict:
    """What results need to know about this firmware, kept beside the project for `harness eval`."""
    elf = project.path / ".pio" / "build" / project.env / "firmware.elf"
    record = {
        "build_id": project.build_id,
        "kernels": project.kernels,
        "flags": " ".join(project.flags),
        "platform": project.board.platformio.platform,
        "framework": project.board.platformio.framework,
        "project": str(project.path),
        **(memory_usage(elf) if elf.is_file() else {}),
    }
    (project.path / BUILD_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return record


def recorded_build(build_id: str, out_root: Path = Path("build")) -> dict | None:
    """The record `harness flash` left for the firmware a board reports, if it was flashed from here."""
    board = build_id.rsplit("-", 1)[0]
    if not is_valid_id(board):  # the board says it: never a path out of out_root
        return None
    for record in sorted((out_root / board).glob(f"*/{BUILD_RECORD}")):
        try:
            data = reading.read_json(record, reading.BUILD_RECORD)
        except UserError:
            continue  # a damaged record is no record of this build
        if isinstance(data, dict) and data.get("build_id") == build_id:
            return data
    return None
