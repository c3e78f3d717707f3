"""Commands that talk to boards: generate, build, link-test, perf, profile, boards (flash: harness/cli/flash.py)."""

import dataclasses
import sys

from harness.api.resolve import board_with_link_options
from harness.boards import scan_boards, user_boards_dir
from harness.cli import exits
from harness.cli.projects import ProjectRequest
from harness.console import print_json, stdout_console


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


def cmd_generate(args) -> int:
    from harness.firmware.project_archive import archive_project

    project = ProjectRequest.named_by(args).generate(args)
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

    request = ProjectRequest.named_by(args)
    board, card, project = request.board, request.card, request.generate(args)
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
