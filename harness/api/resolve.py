"""From settings to the objects a run needs: the board with its link settings, the TFLM tree, the checked
model, and the whole EvalRequest of an eval (board, card, dataset and model obtained and checked before any
sample runs).

The command line's parser imports this module (harness/cli/args.py names these helpers), so it imports
only what parsing needs at the top; the pieces are imported inside the functions."""

import os
from pathlib import Path

from harness.errors import UserError, setting
from harness.link.registry import NATIVE_PROTOCOL


def tflm_tree(settings, board=None):
    """`tflm` (a path), else HARNESS_TFLM_TREE, else for `board` (given when its firmware is built) the tree
    harness prepares from its [tflm] recipe (docs/tflm.md). None: no board, or one that gets TFLM elsewhere.
    `settings`: anything with the setting as an attribute (EvalSettings, the parsed command line)."""
    from harness.firmware.tflm_tree import TflmTree

    path = getattr(settings, "tflm", None) or os.environ.get("HARNESS_TFLM_TREE")
    if path:
        return TflmTree(Path(path))
    if board is None:
        return None
    from harness.firmware.tflm_obtain import board_tree

    return board_tree(board)


def emulated_tflm_tree(settings, board):
    """For runs that build firmware only for QEMU boards (eval, perf, profile, stream): a real board runs
    what was flashed, the virtual one the host interpreter."""
    from harness.device.drivers import driver_type

    return tflm_tree(settings, board if driver_type(board).builds_at_start else None)


def model_for(settings, board):
    """The card and its model (`model`, `model_file`), checked to be deployable on the board."""
    from harness.model.cards import load_card

    card = load_card(settings.model)
    return card, card_model(card, settings, board)


def card_model(card, settings, board):
    """The card's model (`model_file`, else the card's own, fetched when not cached), checked to be deployable on
    the board and to fit the card. A command checks what it can from the card alone before this fetch."""
    from harness.model.card_fit import check_card_model
    from harness.model.deployable import require_deployable
    from harness.model.fetch import obtain_model
    from harness.model.tflite_file import read_tflite

    model = read_tflite(Path(settings.model_file) if settings.model_file else obtain_model(card))
    require_deployable(model, board)
    check_card_model(card, model, own_file=not settings.model_file)
    return model


def board_with_link_options(settings):
    """The board file `board` names, with the link settings applied (harness/device/launch.py)."""
    from harness.boards import get_board
    from harness.device.launch import with_link_options

    return with_link_options(
        get_board(settings.board),
        settings.link_baud,
        settings.emulate_invoke_ms,
        settings.switch_baud,
        baud=settings.baud,
        protocol=getattr(settings, "protocol", NATIVE_PROTOCOL),
    )


def checked_boards(settings):
    """The run's board with its link settings, refused before a run folder exists or firmware is built
    when the way it is named (port, places, count, faults, meter) cannot work for it."""
    return checked_fleet(settings)[0]


def checked_fleet(settings):
    """checked_boards, and how many boards of it the run uses (--boards, or the boards --port, --serial or
    --labgrid-place name)."""
    from harness.device.drivers import driver_type
    from harness.device.fleet import FleetRequest, check_fleet
    from harness.device.launch import ConnectOptions

    board = board_with_link_options(settings)
    driver = driver_type(board, settings.labgrid_place)
    driver.refuse_port(board, settings.port)
    driver.refuse_faults(settings.faults)
    named = ConnectOptions.named_by(settings)
    boards = check_fleet(board, named, FleetRequest(settings.boards, settings.labgrid_tags))
    if boards > 1 and settings.meter:
        raise UserError(f"{setting('meter')} measures one board: drop it, or run each board alone")
    return board, boards


def eval_request(settings, results_root: Path, run_id: str | None = None):
    """The run the settings (EvalSettings) name: board, card, dataset and model obtained and checked before
    any sample runs. `run_id`: resume that unfinished run."""
    from harness.eval.convert import converted_for_eval
    from harness.eval.runner import EvalRequest
    from harness.eval.tasks import DatasetRequest, task_for
    from harness.model.card_fit import check_card_model
    from harness.model.cards import load_card
    from harness.model.convert import is_float_model
    from harness.model.deployable import require_deployable
    from harness.model.fetch import obtain_model
    from harness.model.tflite_file import read_tflite

    board, boards = checked_fleet(settings)
    card = load_card(settings.model)
    task = task_for(card)
    subsets = task.subsets(settings.subset)
    splits = [x.strip() for x in settings.split.split(",") if x.strip()] if settings.split else None
    wanted = DatasetRequest(
        settings.dataset,
        subsets,
        splits,
        settings.limit,
        settings.clean_labels,
        pools=settings.pools is True,  # hf: streams whole pools (every split to its end) only when asked
        seed=settings.seed,
    )
    dataset = task.load_dataset(wanted)
    model_path = Path(settings.model_file) if settings.model_file else obtain_model(card)
    converted_from = None
    own_file = not settings.model_file
    if is_float_model(model_path):
        conversion = converted_for_eval(model_path, card, dataset)
        model_path, converted_from, own_file = conversion.path, conversion.provenance(), False
    model = read_tflite(model_path)
    require_deployable(model, board)
    check_card_model(card, model, own_file)  # before the run: a card that does not fit leaves nothing behind
    return EvalRequest(
        settings=settings,
        card=card,
        model=model,
        board=board,
        boards=boards,
        dataset=dataset,
        subsets=subsets,
        results_root=results_root,
        tflm=emulated_tflm_tree(settings, board),
        run_id=run_id,
        converted_from=converted_from,
    )
