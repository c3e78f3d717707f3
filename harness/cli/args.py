"""Argument types and the helpers several commands share."""

import argparse
import math
import os
import sys
from pathlib import Path

from harness.boards import get_board
from harness.errors import UserError
from harness.model.card import check_card_model, load_card
from harness.model.deployable import require_deployable
from harness.model.fetch import obtain_model
from harness.model.references import REFERENCES
from harness.model.tflite_file import read_tflite

EXIT_USAGE = 2  # bad input: one line naming the problem and the fix


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"harness: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _number(text: str, convert, valid, expected: str):
    """`text` converted and checked, or the parser's one-line error naming what was expected."""
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 1, "a whole number of at least 1")


def positive_float(text: str) -> float:
    return _number(text, float, lambda v: v > 0 and math.isfinite(v), "a number of seconds above 0")


def non_negative_float(text: str) -> float:
    return _number(text, float, lambda v: v >= 0 and math.isfinite(v), "a number of seconds of at least 0")


def whole_number(low: int, high: int, expected: str):
    """An argparse type: a whole number in low..high, else one line naming `expected`."""

    def parse(text: str) -> int:
        return _number(text, int, lambda v: low <= v <= high, expected)

    return parse


def real_number(low: float, high: float, expected: str):
    """An argparse type: a finite number in low..high (NaN and infinities refused)."""

    def parse(text: str) -> float:
        return _number(text, float, lambda v: math.isfinite(v) and low <= v <= high, expected)

    return parse


U32 = (1 << 32) - 1
non_negative_int = whole_number(0, U32, "a whole number of at least 0")
seed_number = whole_number(0, (1 << 63) - 1, "a seed: a whole number of at least 0")
baud_rate = whole_number(0, U32, "a baud rate: a whole number of at least 0 (0: unpaced or stay)")
milliseconds = whole_number(0, U32, "a number of milliseconds of at least 0")
invoke_ms = real_number(0, 3_600_000, "a number of milliseconds from 0 to 3600000")
fraction = real_number(0, 1e6, "a relative change of at least 0 (e.g. 0.02 for 2 %)")
decibels = real_number(-200, 200, "a number of decibels from -200 to 200")


def port_number(text: str) -> int:
    return _number(text, int, lambda v: 0 <= v <= 65535, "a port number 0..65535 (0: any free port)")


def reference_names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in REFERENCES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown reference {', '.join(unknown)}; valid: {', '.join(REFERENCES)}")
    return names


def tflm_tree(args, board=None):
    """--tflm PATH, else HARNESS_TFLM_TREE, else for `board` (given when its firmware is built) the tree harness
    prepares from its [tflm] recipe (docs/tflm.md). None: no board, or one that gets TFLM elsewhere."""
    from harness.firmware.tflm_tree import TflmTree

    path = getattr(args, "tflm", None) or os.environ.get("HARNESS_TFLM_TREE")
    if path:
        return TflmTree(Path(path))
    if board is None:
        return None
    from harness.firmware.tflm_obtain import board_tree

    return board_tree(board)


def emulated_tflm_tree(args, board):
    """For commands that build firmware only for QEMU boards (eval, perf, profile, stream): a real board runs
    what was flashed, the virtual one the host interpreter."""
    return tflm_tree(args, board if board.kind == "emulated" else None)


def model_for(args, board):
    """The card and its model, checked to be deployable on the board."""
    card = load_card(args.model)
    model = read_tflite(Path(args.model_file) if args.model_file else obtain_model(card))
    require_deployable(model, board)
    check_card_model(card, model, own_file=not args.model_file)
    return card, model


def order_seed(value: int | None) -> int | None:
    from harness.eval.order import new_seed

    return new_seed() if value == -1 else value


def iou_threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise UserError(f"--iou {text!r} is neither 'ilsvrc' nor a number in (0, 1]")
    return value


def output_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    common.add_argument("--quiet", action="store_true", help="no progress, only what a CI log needs")
    return common


def link_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--link-baud", type=baud_rate, help="virtual board: pace its link like a UART at this baud rate (0: unpaced)"
    )
    common.add_argument(
        "--emulate-invoke-ms", type=invoke_ms, help="virtual board: each inference takes at least this long"
    )
    common.add_argument(
        "--switch-baud", type=baud_rate, help="after the handshake, switch the link to this baud rate (0: stay)"
    )
    common.add_argument(
        "--labgrid-place", metavar="NAME", help="a board in a labgrid farm: acquire the place, use its serial port"
    )
    common.add_argument(
        "--faults",
        type=fault_spec,
        help="inject link faults through a proxy, e.g. drop=1e-3,corrupt=1e-3,dup=1e-4,reset-every=200",
    )
    return common


def fault_spec(text: str):
    from harness.link.faults import FaultSpec

    try:
        return FaultSpec.parse(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(exc.worded_for_cli()) from None


def board_with_link_options(args):
    from harness.device.launch import with_link_options

    return with_link_options(get_board(args.board), args.link_baud, args.emulate_invoke_ms, args.switch_baud)
