"""Commands that talk to boards: flash, generate, link-test, perf, profile, boards."""

import dataclasses
import sys
from pathlib import Path

from harness.api.resolve import board_with_link_options, model_for, tflm_tree
from harness.boards import get_board, scan_boards, user_boards_dir
from harness.cli import exits
from harness.console import print_json, stdout_console
from harness.errors import UserError
from harness.model.cards import load_card
from harness.model.deployable import require_deployable
from harness.model.fetch import obtain_model
from harness.model.tflite_file import read_tflite
from harness.streaming.pipeline import streaming_frontend


def cmd_link_test(args) -> int:
    from harness.console import progress
    from harness.device.launch import ConnectOptions, connect
    from harness.device.selftest import describe, run_link_test
    from harness.link.roles import LinkTesting

    board = board_with_link_options(args)
    options = ConnectOptions.named_by(args, roles=(LinkTesting,))
    with (
        connect(board, None, options) as client,
        progress(args.bytes, f"link-test {board.id}", unit="bytes") as advance,
    ):
        report = run_link_test(client, board, args.bytes, advance=advance)
    if args.json:
        print_json(
            dataclasses.asdict(report) | {"ok": report.ok, "perf_repeats_exactly": report.perf_repeats_exactly()}
        )
    elif not args.quiet or not report.ok:
        console = stdout_console()
        for line in describe(report, board.latency_source):
            console.print(line, highlight=False)
    return exits.OK if report.ok else exits.FAILED


def cmd_flash(args) -> int:
    """Through the board's driver, always: a real board gets a PlatformIO upload, QEMU and hosted boards build
    and boot their firmware, the virtual board has nothing to flash."""
    from harness.device.drivers import driver_type

    board = get_board(args.board)
    driver = driver_type(board)
    return flash_project(args, board) if driver.uploads_project else flash_started(args, board, driver.flashes)


def flash_started(args, board, flashes: bool) -> int:
    """A board harness starts: its driver boots the firmware it builds (with the model when --tflm is given)."""
    from harness.device.drivers import ConnectOptions, driver_for

    tflm = tflm_tree(args) if flashes else None
    model = None
    if tflm is not None:
        card = load_card(args.model)
        model = read_tflite(Path(args.model_file) if args.model_file else obtain_model(card))
        require_deployable(model, board)
    info = driver_for(board, model, ConnectOptions.named_by(args, tflm=tflm)).flash()
    if info is None:
        _say_flashed(
            args,
            {"board": board.id, "flashed": False},
            "the virtual board runs the model each command names; there is nothing to flash",
        )
        return 0
    what = f"model {info.model_sha256_prefix}…" if model else "self-test firmware (no model: pass --tflm PATH)"
    _say_flashed(
        args,
        {"board": board.id, "flashed": True, "model_sha256_prefix": info.model_sha256_prefix if model else None}
        | _device_info(info),
        f"{board.id}: firmware {info.build_id} booted and answered HELLO; {what}",
        f"  protocol v{info.protocol_version}, frames {info.max_request_frame}/{info.max_response_frame} B, "
        f"timer {info.tick_kind.name.lower()} at {info.tick_hz:,} Hz",
    )
    return 0


def _device_info(info) -> dict:
    """What the flashed firmware said in its HELLO, for --json."""
    return {
        "build_id": info.build_id,
        "protocol_version": info.protocol_version,
        "max_request_frame": info.max_request_frame,
        "max_response_frame": info.max_response_frame,
        "tick_kind": info.tick_kind.name.lower(),
        "tick_hz": info.tick_hz,
    }


def _say_flashed(args, figures: dict, headline: str, *details: str) -> None:
    """flash's result: JSON, the headline alone (--quiet), or the headline and its details."""
    if args.json:
        print_json(figures)
        return
    console = stdout_console()
    for line in (headline,) if args.quiet else (headline, *details):
        console.print(line, highlight=False)


def _timing_options(args, more: tuple[str, ...] = ()) -> dict:
    """The keywords of harness.api.measure's perf and profile, from the command line."""
    names = ("board", "port", "model_file", "dataset", "protocol", "baud", "tflm", *more)
    return {name: getattr(args, name) for name in names} | {"progress": not (args.quiet or args.json)}


def cmd_perf(args) -> int:
    from harness.api.measure import perf

    more = ("runs", "warmups", "mlperf", "meter", "window_seconds", "emulate_invoke_ms")
    report = perf(args.model, **_timing_options(args, more))
    stats = report.stats()
    if args.json:
        print_json(dataclasses.asdict(report) | {"stats": stats})
        return 0
    console = stdout_console()
    console.print(
        f"{report.board}: {len(report.runs)} invokes after {report.warmups} warm-ups, {report.unit} "
        f"({report.source}): min {stats['min']:,.1f}, median {stats['median']:,.1f}, p95 {stats['p95']:,.1f}, "
        f"max {stats['max']:,.1f}",
        highlight=False,
    )
    if report.mlperf_windows:
        console.print(
            f"  MLPerf-style: median of {len(report.mlperf_windows)} windows of >= 10 s: "
            f"{float(sorted(report.mlperf_windows)[len(report.mlperf_windows) // 2]):,.1f} {report.unit}",
            highlight=False,
        )
    if report.energy:
        for line in energy_lines(report.energy):
            console.print(line, highlight=False)
    return 0


def energy_lines(energy) -> list[str]:
    """The console's account of `harness perf --meter`: the median, its windows and any coarse-meter warning."""
    inferences = [w.inferences for w in energy.windows]
    lines = [
        f"  energy ({energy.source}, {energy.window_kind} windows, {energy.meter}): median "
        f"{energy.uj_per_inference:,.1f} µJ per inference over {len(energy.windows)} windows of >= "
        f"{energy.window_seconds:g} s ({min(inferences):,}-{max(inferences):,} back-to-back invokes each), "
        f"{energy.mean_watts * 1000:.3f} mW inside them"
    ]
    if energy.resolution["statement"]:
        lines.append(f"  warning: {energy.resolution['statement']}")
    return lines


def cmd_profile(args) -> int:
    from rich.table import Table

    from harness.api.measure import profile

    report = profile(args.model, **_timing_options(args))
    if args.json:
        print_json(dataclasses.asdict(report) | {"coverage": report.coverage})
        return 0
    table = Table(title=f"{report.model} on {report.board}: {report.total.text()} per invoke ({report.total.source})")
    for column in ("#", "operator", report.total.unit, "share %"):
        table.add_column(column, justify="left" if column == "operator" else "right")
    for index, (name, figure) in enumerate(report.operators):
        share = 100 * figure.value / report.total.value if report.total.value else 0
        table.add_row(str(index), name, f"{figure.value:,.0f}", f"{share:.1f}")
    console = stdout_console()
    console.print(table)
    if report.coverage is not None:
        console.print(f"operators account for {100 * report.coverage:.1f} % of the whole invoke", highlight=False)
    if report.operators_run > len(report.operators):
        console.print(f"{report.operators_run - len(report.operators)} operators did not fit the response frame")
    return 0


def flash_project(args, board) -> int:
    """A real board: its driver uploads the generated PlatformIO project, then checks the firmware it answers with."""
    from harness.device.drivers import ConnectOptions, driver_for
    from harness.firmware.platformio import generate_project

    card, model = model_for(args, board)
    driver = driver_for(board, model, ConnectOptions.named_by(args))
    project = generate_project(
        board, model, card.name, tflm_tree(args, board), Path(args.out), streaming_frontend(card)
    )
    info = driver.flash(project)
    if info.model_sha256_prefix != model.sha256[:16] or info.build_id != project.build_id:
        raise UserError(
            f"{board.id} answers with model {info.model_sha256_prefix}… and firmware {info.build_id}, expected "
            f"{model.sha256[:16]}… and {project.build_id}: the upload did not take; check the port and the probe"
        )
    figures = {"board": board.id, "flashed": True, "model": card.name, "model_sha256_prefix": model.sha256[:16]}
    _say_flashed(
        args,
        figures | _device_info(info) | {"project": str(project.path), "kernels": project.kernels},
        f"{board.id}: flashed {project.build_id} ({project.kernels} kernels), model {card.name}",
    )
    return 0


def _dut_build(args, card, model):
    """`--protocol eembc`: the card's MLPerf Tiny / EEMBC DUT firmware in `--eembc-mode` (docs/eembc.md);
    else None, harness's protocol."""
    from harness.firmware.eembc_dut import EEMBC_MODES, EembcDutBuild
    from harness.link.registry import session_type
    from harness.model.dut import dut_computation

    if not session_type(args.protocol).DUT_FIRMWARE:
        if args.eembc_mode != EEMBC_MODES[0]:
            raise UserError(f"--eembc-mode {args.eembc_mode} is for DUT firmware: add --protocol eembc")
        return None
    return EembcDutBuild.for_card(card.eembc, dut_computation(card, model).kind, args.eembc_mode)


def _generated_project(args):
    """The board, the card and the PlatformIO project of --board and --model (--protocol eembc: its DUT) in --out."""
    from harness.firmware.platformio import generate_project

    board = get_board(args.board)
    card, model = model_for(args, board)
    dut = _dut_build(args, card, model)
    project = generate_project(
        board, model, card.name, tflm_tree(args, board), Path(args.out), streaming_frontend(card), dut=dut
    )
    return board, card, project


def cmd_generate(args) -> int:
    from harness.firmware.project_archive import archive_project

    _, _, project = _generated_project(args)
    archive = archive_project(project.path) if args.archive else None
    if args.json:
        found = {"project": str(project.path), "build_id": project.build_id, "kernels": project.kernels}
        print_json(found | ({"archive": str(archive)} if archive else {}))
    else:
        print(project.path)
        if archive:
            print(archive)
    return 0


def cmd_build(args) -> int:
    from harness.firmware.platformio import build

    board, card, project = _generated_project(args)
    record = build(project)
    if args.json:
        print_json(record)
        return 0
    fpu = record.get("fpu")
    scanned = (
        f", {fpu['double_instructions']} double-precision instructions"
        if fpu and fpu["double_instructions"] is not None
        else ""
    )
    fpu_text = f"; FPU {fpu['fp_arch']}, {fpu['hardfp_use']}{scanned} (board: {fpu['fpu']})" if fpu else ""
    stdout_console().print(
        f"{board.id}: built {project.build_id} ({project.kernels} kernels), model {card.name}: "
        f"flash {record['flash_bytes']:,} of {board.memory.flash_bytes:,} B, "
        f"static RAM {record['static_ram_bytes']:,} of {board.memory.ram_bytes:,} B (from the ELF){fpu_text}; "
        f"{project.path}",
        highlight=False,
    )
    return 0


def cmd_boards(args) -> int:
    from harness.device.discovery import attached_boards

    found = scan_boards()
    for reason in found.damaged.values():  # named, not dropped: the good boards still show
        print(f"harness: not listed, damaged: {reason}", file=sys.stderr)
    boards = found.boards
    attached = attached_boards(boards.values())
    if args.json:
        damaged = [{"file": str(path), "problem": reason} for path, reason in found.damaged.items()]
        boards_json = [dataclasses.asdict(b) for b in boards.values()]
        print_json({"boards": boards_json, "attached": attached, "damaged": damaged})
        return 0
    console = stdout_console()
    for found in attached:
        console.print(
            f"attached: {found['board']:12} {found['port']}  {found['usb_id']}  serial {found['serial_number']}",
            highlight=False,
        )
    user_folder = user_boards_dir()
    for board in boards.values():
        mine = board.source_file is not None and board.source_file.parent == user_folder
        origin = f"  (yours: {board.source_file})" if mine else ""
        console.print(
            f"{board.id:14} {board.kind:8} latency={board.latency_source:8} {board.name}{origin}",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"your boards folder: {user_folder} (HARNESS_BOARDS_DIR overrides it)", highlight=False)
    return 0
