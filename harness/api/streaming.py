"""Run a keyword stream (a WAV) through a board and the host, scored against a ledger when one is given.
`harness stream run` calls this too."""

from pathlib import Path
from types import SimpleNamespace

from harness.api.runs import StreamRun, view
from harness.console import quieted
from harness.defaults import DEFAULT_BOARD
from harness.errors import UserError
from harness.link.registry import NATIVE_PROTOCOL

STREAM_MODEL = "tflm_micro_speech"


def stream(
    wav: str | Path,
    *,
    board: str = DEFAULT_BOARD,
    model: str = STREAM_MODEL,
    model_file: str | None = None,
    ledger: str | Path | None = None,
    ledger_unit: str | None = None,
    tolerance_ms: int | None = None,
    wakeword: str | None = None,
    results: str | Path | None = None,
    port: str | None = None,
    serial: str | None = None,
    protocol: str = NATIVE_PROTOCOL,
    tflm: str | None = None,
    progress: bool = False,
) -> StreamRun:
    """The stream `wav` (16 kHz mono 16-bit) through the keyword card's pipeline on the board and on the
    host, and the run: its `device_equals_host` says whether both detected the same; with a `ledger` of
    events (label,start_ms[,end_ms]) its `scores` hold each policy's score (or why the ledger cannot serve it)."""
    from harness.api.resolve import card_model, emulated_tflm_tree
    from harness.boards import get_board
    from harness.model.cards import load_card
    from harness.paths import results_dir
    from harness.results.runs import load_run
    from harness.results.store import results_root
    from harness.streaming.run import StreamRequest, run_stream, stream_inputs

    if not wav:
        raise UserError("a stream run needs a WAV (16 kHz mono 16-bit); `harness stream build` composes one")
    # as given (None: $HARNESS_RESULTS_DIR, else results), before any board starts: Path('') is the working folder
    root = results_root(results_dir(results))
    with quieted(not progress):
        started = get_board(board)
        card = load_card(model)
        # the WAV and the ledger before the model is fetched or the board started: bad input is refused first
        inputs = stream_inputs(card, Path(wav), Path(ledger) if ledger else None, ledger_unit, tolerance_ms)
        request = StreamRequest(
            card=card,
            model=card_model(card, SimpleNamespace(model_file=model_file), started),
            board=started,
            wav=Path(wav),
            results_root=root,
            port=port,
            tflm=emulated_tflm_tree(SimpleNamespace(tflm=tflm), started),
            serial=serial,
            ledger=Path(ledger) if ledger else None,
            ledger_unit=ledger_unit,
            tolerance_ms=tolerance_ms,
            wakeword=wakeword,
            protocol=protocol,
        )
        outcome = run_stream(request, inputs)
    return view(load_run(str(outcome.run_dir)))
