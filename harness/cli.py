"""The `harness` command line."""

import argparse
import os
import sys
from pathlib import Path

from harness import __version__
from harness.boards import all_boards, get_board
from harness.console import stdout_console
from harness.errors import BuildError, LinkError, UserError
from harness.eval.dataset import DEMO, load_dataset
from harness.eval.subsets import SUBSETS, parse_subsets
from harness.model.card import DEFAULT_MODEL, all_cards, load_card
from harness.model.fetch import obtain_model
from harness.model.references import DEFAULT_REFERENCES, REFERENCES
from harness.model.tflite_file import read_tflite

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"harness: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _reference_names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in REFERENCES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown reference {', '.join(unknown)}; valid: {', '.join(REFERENCES)}")
    return names


def _tflm_tree(args):
    from harness.firmware.tflm_tree import TflmTree

    path = args.tflm or os.environ.get("HARNESS_TFLM_TREE")
    return TflmTree(Path(path)) if path else None


def _cmd_eval(args) -> int:
    from harness.eval.runner import EvalRequest, run_eval
    from harness.results.report import print_summary

    board = get_board(args.board)
    subsets = parse_subsets(args.subset)
    card = load_card(args.model)
    dataset = load_dataset(args.dataset)  # before the model: a typo should not cost a download
    model = read_tflite(Path(args.model_file) if args.model_file else obtain_model(card))
    request = EvalRequest(
        card=card,
        model=model,
        board=board,
        dataset=dataset,
        subsets=subsets,
        limit=args.limit,
        port=args.port,
        results_root=Path(args.results),
        reference_names=args.references,
        tflm=_tflm_tree(args),
    )
    print_summary(run_eval(request))
    return 0


def _cmd_link_test(args) -> int:
    from harness.console import progress
    from harness.device.launch import connect
    from harness.link.selftest import describe, run_link_test

    board = get_board(args.board)
    with connect(board, None, args.port) as client, progress(args.bytes, f"link-test {board.id}") as advance:
        report = run_link_test(client, board, args.bytes, advance=advance)
    console = stdout_console()
    for line in describe(report, board.latency_source):
        console.print(line, highlight=False)
    return 0 if report.ok else 1


def _cmd_flash(args) -> int:
    from harness.device.launch import connect

    board = get_board(args.board)
    console = stdout_console()
    if board.kind == "virtual":
        console.print("the virtual board runs the model each command names; there is nothing to flash")
        return 0
    if board.kind == "device":
        raise UserError(
            f"flashing {board.id} needs its PlatformIO project, which this harness version does not generate yet"
        )
    tflm = _tflm_tree(args)
    model = None
    if tflm is not None:
        card = load_card(args.model)
        model = read_tflite(Path(args.model_file) if args.model_file else obtain_model(card))
    with connect(board, model, tflm=tflm) as client:
        info = client.info
    what = f"model {info.model_sha256_prefix}…" if model else "self-test firmware (no model: pass --tflm PATH)"
    console.print(f"{board.id}: firmware {info.build_id} booted and answered HELLO; {what}", highlight=False)
    console.print(
        f"  protocol v{info.protocol_version}, frames {info.max_request_frame}/{info.max_response_frame} B, "
        f"timer {info.tick_kind.name.lower()} at {info.tick_hz:,} Hz",
        highlight=False,
    )
    return 0


def _cmd_boards(_args) -> int:
    console = stdout_console()
    for board in all_boards().values():
        console.print(f"{board.id:12} {board.kind:8} latency={board.latency_source:8} {board.name}")
    return 0


def _cmd_models(_args) -> int:
    console = stdout_console()
    for card in all_cards().values():
        console.print(f"{card.name:28} {card.task:22} {card.title}")
    return 0


def _cmd_subsets(_args) -> int:
    console = stdout_console()
    for subset in SUBSETS.values():
        column = subset.flag or "(every labelled image)"
        console.print(f"{subset.name:26} column={column:26} members={subset.members_are}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="harness", description="Benchmark TinyML models on microcontrollers.")
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("eval", help="stream a benchmark subset to a board and compare with the host")
    run.add_argument("--board", default="sim", help="board id from boards/ (default: sim, the virtual board)")
    run.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    run.add_argument("--model-file", help="a .tflite to use instead of the card's own file (same preprocessing)")
    run.add_argument("--port", help="serial device or pyserial URL of a real board (default: found by USB id)")
    run.add_argument("--dataset", default=DEMO, help="'demo' or a folder with labels.csv and images/")
    run.add_argument("--subset", default="all", help="comma-separated subsets (see `harness subsets`)")
    run.add_argument("--limit", type=_positive_int, help="evaluate at most this many samples")
    run.add_argument("--results", default="results", help="folder for run folders (default: results)")
    run.add_argument(
        "--references",
        type=_reference_names,
        default=DEFAULT_REFERENCES,
        help=f"host references, comma-separated (default: {','.join(DEFAULT_REFERENCES)})",
    )
    run.add_argument("--tflm", help="TFLM source tree for firmware builds (default: $HARNESS_TFLM_TREE)")
    run.set_defaults(handler=_cmd_eval)

    flash = commands.add_parser("flash", help="build the firmware for a board and load it (QEMU: boot and check)")
    flash.add_argument("--board", required=True, help="board id from boards/")
    flash.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    flash.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
    flash.add_argument("--tflm", help="TFLM source tree (default: $HARNESS_TFLM_TREE); without it, self-test firmware")
    flash.set_defaults(handler=_cmd_flash)

    link = commands.add_parser("link-test", help="check and time the link: echo frames both ways, PERF workload")
    link.add_argument("--board", default="sim", help="board id from boards/ (default: sim)")
    link.add_argument("--port", help="serial device or pyserial URL of a real board")
    link.add_argument("--bytes", type=_positive_int, default=1 << 20, help="bytes through the link, both ways")
    link.set_defaults(handler=_cmd_link_test)

    commands.add_parser("boards", help="list the boards").set_defaults(handler=_cmd_boards)
    commands.add_parser("models", help="list the model cards").set_defaults(handler=_cmd_models)
    commands.add_parser("subsets", help="list the benchmark subsets").set_defaults(handler=_cmd_subsets)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except UserError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (LinkError, BuildError) as exc:
        print(f"harness: link error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("harness: interrupted; no results were written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
