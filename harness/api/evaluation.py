"""Evaluate a model on a board: the settings checked, the request assembled (harness/api/resolve.py), the
run done by harness/eval/runner.py and read back as an EvalRun. `harness eval` calls this too."""

from collections.abc import Callable
from pathlib import Path

from harness.api.runs import EvalRun, view
from harness.console import quieted
from harness.defaults import DEFAULT_BOARD, DEFAULT_MODEL, DEMO
from harness.errors import UserError, setting
from harness.eval.settings import EvalSettings

Notes = Callable[[str], None]


def evaluate(
    model: str = DEFAULT_MODEL,
    dataset: str = DEMO,
    subsets: str | list[str] = "all",
    *,
    board: str = DEFAULT_BOARD,
    results: str | Path | None = None,
    progress: bool = False,
    notes: Notes | None = None,
    **settings,
) -> EvalRun:
    """Evaluate `model` (a card name or a card's path) on `dataset`'s `subsets` on `board`, and return the run.

    `settings` are the eval's other settings, named as harness/eval/settings.py names them (`limit`,
    `seed`, `pools`, `references`, `port`, `labgrid_place`, …; `harness eval --help` shows each as its
    flag): values as Python values or as the flag's text. `results`: the folder the run folder is written
    to. `progress`: show the progress bar (or CI progress lines) on stderr. `notes`: called with each line
    the run says once about its labels (they are in the run's `notes` too). Raises harness.errors.UserError
    for bad input, LinkError when the board fails; nothing is printed."""
    from harness.paths import results_dir
    from harness.results.store import results_root

    if not isinstance(subsets, str):
        subsets = ",".join(subsets)
    results = results_dir(results)  # None: $HARNESS_RESULTS_DIR, else results
    results_root(results)  # as given: Path('') would be the working folder
    chosen = EvalSettings.from_keywords(board=board, model=model, dataset=dataset, subset=subsets, **settings)
    return evaluate_settings(chosen, Path(results), progress=progress, notes=notes)


def evaluate_settings(
    settings: EvalSettings,
    results: Path,
    run_id: str | None = None,
    *,
    progress: bool = False,
    notes: Notes | None = None,
) -> EvalRun:
    """The run `settings` describe (EvalSettings, all of them), written under `results`; with `run_id`,
    that unfinished run resumed from its journal."""
    from harness.api.resolve import eval_request
    from harness.eval.runner import run_eval
    from harness.eval.subsets import label_notes
    from harness.results.runs import load_run
    from harness.results.store import results_root

    results = results_root(results)  # before any work: '', a name that is not UTF-8, a file or a FIFO refused
    with quieted(not progress):
        request = eval_request(settings, results, run_id)
        said, _ = label_notes(request.dataset, request.subsets)
        for line in said if notes else ():
            notes(line)
        outcome = run_eval(request)
    return view(load_run(str(outcome.run_dir)), said)


def resume(
    run: str, results: str | Path | None = None, *, progress: bool = False, notes: Notes | None = None
) -> EvalRun:
    """Finish an interrupted eval run (its id under `results` or a brief name of it: a unique prefix, latest,
    latest~N; or its .partial folder) with the settings it started with."""
    from harness.paths import results_dir
    from harness.results.journal import REQUEST, known_as, load_request
    from harness.results.store import check_not_held, partial_path, results_root, resume_target

    if not str(run).strip():
        raise UserError(f"{setting('resume')} needs the id of an unfinished run; `harness runs` lists runs")
    results = results_dir(results)  # None: $HARNESS_RESULTS_DIR, else results
    results_root(results)  # as given: Path('') would be the working folder
    root, run_id = resume_target(Path(results), str(run))
    folder = partial_path(root, run_id)
    if not folder.is_dir():
        done = " (it finished already)" if (root / run_id).is_dir() else ""
        raise UserError(f"no unfinished run {run_id} in {root}{done}; `harness runs --results {root}` lists runs")
    check_not_held(folder)  # at once, before the model and the dataset are loaded
    settings = EvalSettings.restored(load_request(folder), known_as(folder / REQUEST))
    return evaluate_settings(settings, root, run_id, progress=progress, notes=notes)
