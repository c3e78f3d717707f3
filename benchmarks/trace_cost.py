"""What the layer trace costs in flash and static RAM, per board (issue 34; docs/debug.md "Cost"): each model's
firmware built with HP_LAYER_TRACE 1 and with 0, both ELFs read by harness/firmware/elf.py, side by side.

QEMU boards are built by harness's Makefile with each TFLM tree given (default: the fixture trees, CMSIS-NN and
reference kernels). PlatformIO boards are built offline with a prepared PlatformIO core dir per PlatformIO board
(default: the fixtures' platformio/<pio board>/, copied into --work, never written to); a board without one is
listed with the reason. Every PlatformIO build of a board happens in one folder with one build cache, so a later
build compiles only what changed (for the other state, what includes harness_build_config.h). Figures are `host`:
read from the images this machine's compilers made, not measured on a board. A first PlatformIO build takes
minutes (the framework and TFLM; up to half an hour on busy cores).

    python benchmarks/trace_cost.py [--boards qemu_m4 qemu_m7 nucleo_h743] [--models wv_quality_k_2_c_3 ...]
"""

import argparse
import dataclasses
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.boards import Board, board_ids, get_board
from harness.errors import BuildError, UserError
from harness.firmware.assemble import LayerTraceBuild
from harness.firmware.build import COMMON_FLAGS, build_firmware
from harness.firmware.elf import memory_usage
from harness.firmware.tflm_tree import TflmTree
from harness.model.cards import load_card
from harness.model.fetch import obtain_model
from harness.model.tflite_file import read_tflite
from harness.paths import cache_dir

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
MODELS = ("wv_quality_k_2_c_3", "mlperf_tiny_kws01", "mlperf_tiny_vww01")
PIO_TIMEOUT_SECONDS = 3600
STATES = {"traced": LayerTraceBuild(enabled=True), "compiled out": LayerTraceBuild(enabled=False)}


@dataclass(frozen=True)
class Row:
    board: str
    toolchain: str  # the compiler and the flags source
    model: str
    kernels: str
    flash: dict[str, int]  # state -> bytes
    ram: dict[str, int]


class NotBuilt(Exception):
    """A board this machine cannot build, with the reason."""


def _sizes(elf: Path) -> tuple[int, int]:
    usage = memory_usage(elf)
    return usage["flash_bytes"], usage["static_ram_bytes"]


def makefile_rows(board: Board, cards: list[str], trees: list[Path]) -> list[Row]:
    rows = []
    for tree_path in trees:
        tree = TflmTree(tree_path)
        for card_name in cards:
            model = read_tflite(obtain_model(load_card(card_name)))
            flash, ram, toolchain = {}, {}, ""
            for state, trace in STATES.items():
                firmware = build_firmware(board, model, tree, trace=trace)
                flash[state], ram[state] = _sizes(firmware.elf)
                toolchain = f"{firmware.compiler}; harness Makefile: {board.firmware.cpu_flags} {COMMON_FLAGS}"
            rows.append(Row(board.id, toolchain, card_name, tree.kernels, flash, ram))
    return rows


def _offline_core(board: Board, cores: Path, work: Path) -> Path:
    """A writable copy of the prepared PlatformIO core dir for the board (PlatformIO writes into it)."""
    prepared = cores / board.platformio.board
    if not prepared.is_dir():
        raise NotBuilt(
            f"no offline PlatformIO core for {board.platformio.board} ({board.platformio.platform}, "
            f"{board.platformio.framework}) in {cores}: building it would need the registry"
        )
    core = work / "pio-core" / board.platformio.board
    if not core.is_dir():
        partial = core.with_name(core.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(prepared, partial, symlinks=True)
        for path in [partial, *partial.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)
        partial.rename(core)
    return core


def _replace_sources(generated: Path, project: Path) -> None:
    """The generated project's files into `project`, keeping its .pio build folder."""
    project.mkdir(parents=True, exist_ok=True)
    for path in project.iterdir():
        if path.name != ".pio":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    shutil.copytree(generated, project, dirs_exist_ok=True)


def platformio_rows(board: Board, cards: list[str], tree_path: Path, cores: Path, work: Path) -> list[Row]:
    from harness.firmware import platformio

    core = _offline_core(board, cores, work)
    os.environ |= {"PLATFORMIO_CORE_DIR": str(core), "PLATFORMIO_BUILD_CACHE_DIR": str(work / "pio-build-cache")}
    tree = TflmTree(tree_path)
    rows = []
    for card_name in cards:
        card = load_card(card_name)
        model = read_tflite(obtain_model(card))
        flash, ram, toolchain = {}, {}, ""
        for state, trace in STATES.items():
            generated = platformio.generate_project(board, model, card.name, tree, work / "generated", trace=trace)
            fixed = work / board.id / "project"  # one folder: every build reuses the objects of the ones before
            _replace_sources(generated.path, fixed)
            record = platformio.build(dataclasses.replace(generated, path=fixed), timeout=PIO_TIMEOUT_SECONDS)
            flash[state], ram[state] = record["flash_bytes"], record["static_ram_bytes"]
            flags = " ".join(f for f in record["flags"].split() if not f.startswith("-I"))
            toolchain = f"PlatformIO {record['platform']} ({record['framework']}), its gcc-arm-none-eabi: {flags}"
        rows.append(Row(board.id, toolchain, card.name, tree.kernels, flash, ram))
    return rows


def _table(rows: list[Row]) -> Table:
    table = Table(title="layer trace cost (host: sizes read from the ELF)")
    for column in ("board", "model", "kernels", "flash, traced", "flash, compiled out", "cost", "static RAM cost"):
        table.add_column(column, justify="right" if "flash" in column or "cost" in column else "left")
    for row in rows:
        on, off = row.flash["traced"], row.flash["compiled out"]
        ram = row.ram["traced"] - row.ram["compiled out"]
        table.add_row(row.board, row.model, row.kernels, f"{on} B", f"{off} B", f"{on - off:+d} B", f"{ram:+d} B")
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    buildable = [*board_ids("emulated"), *board_ids(platformio=True)]
    parser.add_argument("--boards", nargs="+", default=buildable, choices=buildable)
    parser.add_argument("--models", nargs="+", default=list(MODELS), help="model cards")
    parser.add_argument(
        "--trees",
        nargs="+",
        type=Path,
        default=[FIXTURES / "tflm" / "cmsis_nn", FIXTURES / "tflm" / "reference"],
        help="TFLM trees; QEMU boards are built with each, PlatformIO boards with the first",
    )
    parser.add_argument("--pio-cores", type=Path, default=FIXTURES / "platformio", help="<pio board>/ core dirs")
    parser.add_argument("--work", type=Path, default=cache_dir() / "trace-cost", help="projects and PlatformIO cache")
    args = parser.parse_args()
    for card_name in args.models:  # bad input refused before minutes of building
        load_card(card_name)
    for tree in args.trees:
        TflmTree(tree)
    rows, not_built, toolchains = [], {}, {}
    for board_id in args.boards:
        board = get_board(board_id)
        try:
            if board.platformio is None:
                built = makefile_rows(board, args.models, args.trees)
            else:
                built = platformio_rows(board, args.models, args.trees[0], args.pio_cores, args.work.resolve())
        except NotBuilt as reason:
            not_built[board.id] = str(reason)
            continue
        rows += built
        toolchains |= {f"{row.board} ({row.kernels})": row.toolchain for row in built}
    console = Console(width=160)
    console.print(_table(rows))
    for board, toolchain in toolchains.items():
        console.print(f"{board}: {toolchain}", highlight=False)
    for board, reason in not_built.items():
        console.print(f"{board}: not built here: {reason}", highlight=False)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (UserError, BuildError) as problem:
        print(f"trace_cost: {problem}", file=sys.stderr)
        sys.exit(2)
