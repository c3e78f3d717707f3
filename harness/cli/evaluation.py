"""`harness eval` (and --resume), and the commands that read runs: runs, report, compare, check, score."""

import sys
from pathlib import Path

from harness.cli import exits
from harness.cli.args import board_with_link_options, emulated_tflm_tree
from harness.console import percent, percent_interval, print_json, stdout_console
from harness.errors import UserError, setting
from harness.eval.convert import converted_for_eval
from harness.eval.settings import EvalSettings
from harness.eval.subsets import parse_subsets
from harness.eval.tasks import DatasetRequest, task_for
from harness.files import write_atomically
from harness.model.card import check_card_model, load_card
from harness.model.convert import is_float_model
from harness.model.deployable import require_deployable
from harness.model.fetch import obtain_model
from harness.model.tflite_file import read_tflite


def _unfinished_run(args) -> tuple[Path, str, EvalSettings]:
    """`--resume RUN`: where the run is, and the settings it was started with (only --results, --json and
    --quiet come from this command)."""
    import dataclasses

    from harness.errors import cli_flag
    from harness.results.journal import REQUEST, known_as, load_request
    from harness.results.store import partial_path, resume_target

    if not args.resume.strip():
        raise UserError("--resume needs the id of an unfinished run; `harness runs` lists runs")
    for f in dataclasses.fields(EvalSettings):  # the run keeps its own settings: a differing one would be ignored
        if getattr(args, f.name) != f.default:
            flag = f.metadata["flag"].flag or cli_flag(f.name)
            raise UserError(
                f"--resume {args.resume} continues the run with the settings it started with: drop {flag} "
                "(only --results, --json and --quiet may be given with --resume)"
            )
    root, run_id = resume_target(Path(args.results), args.resume)
    folder = partial_path(root, run_id)
    if not folder.is_dir():
        done = " (it finished already)" if (root / run_id).is_dir() else ""
        raise UserError(f"no unfinished run {run_id} in {root}{done}; `harness runs --results {root}` lists runs")
    return root, run_id, EvalSettings.restored(load_request(folder), known_as(folder / REQUEST))


def _check_boards(board, settings: EvalSettings) -> None:
    from harness.device.fleet import FleetRequest, check_fleet
    from harness.device.launch import ConnectOptions

    named = ConnectOptions(port=settings.port, serial_number=settings.serial, labgrid_place=settings.labgrid_place)
    boards = check_fleet(board, named, FleetRequest(settings.boards, settings.labgrid_tags))
    if boards > 1 and settings.meter:
        raise UserError(f"{setting('meter')} measures one board: drop it, or run each board alone")


def eval_request(settings: EvalSettings, results_root: Path, run_id: str | None = None):
    """The run the settings name: board, card, dataset and model obtained and checked before any sample runs."""
    from harness.device.drivers import driver_type
    from harness.eval.runner import EvalRequest

    board = board_with_link_options(settings)
    driver = driver_type(board, settings.labgrid_place)
    driver.refuse_port(board, settings.port)  # before a run folder exists or firmware is built
    driver.refuse_faults(settings.faults)
    _check_boards(board, settings)
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
        dataset=dataset,
        subsets=subsets,
        results_root=results_root,
        tflm=emulated_tflm_tree(settings, board),
        run_id=run_id,
        converted_from=converted_from,
    )


def _warn_of_labels(dataset, subsets) -> int:
    """Once a run, on stderr: what cleaned labels changed, and members whose flags contradict their label
    (both are kept in the run's manifest). Returns the count of those members."""
    from harness.eval.subsets import flag_contradictions

    clean = dataset.clean_labels
    if clean is not None:
        print(
            f"harness: clean labels from {', '.join(clean.files)} changed {clean.changed} person labels "
            f"({clean.depictions} verified depictions are non-persons, {clean.excluded} rows excluded, "
            f"{clean.not_listed} rows not listed keep their own)",
            file=sys.stderr,
        )
    count = flag_contradictions(dataset.samples, subsets)
    if count:
        print(
            f"harness: warning: {count} members of {', '.join(s.name for s in subsets)} have flags that contradict "
            "their person label (e.g. far on a non-person, a depiction flag on a person); they are selected by "
            "flag, as the reference evaluator does, and scored with their own label",
            file=sys.stderr,
        )
    return count


def cmd_eval(args) -> int:
    from harness.eval.runner import run_eval
    from harness.results.report import print_summary

    if args.resume is not None:
        root, run_id, settings = _unfinished_run(args)
    else:  # a drawn shuffle seed is kept with the settings, so a resumed run keeps the same order
        root, run_id, settings = Path(args.results), None, EvalSettings.from_args(args)
    request = eval_request(settings, root, run_id)
    _warn_of_labels(request.dataset, request.subsets)
    outcome = run_eval(request)
    if args.json:
        print_json(outcome.as_json())
    elif args.quiet:
        print(outcome.run_dir)
    else:
        print_summary(outcome.summary, outcome.run_dir)
    return 0


def cmd_runs(args) -> int:
    import dataclasses

    from rich.table import Table

    from harness.results.html_report import latency_cell
    from harness.results.runs import EvalHeadline, headline, scan_runs

    listing = scan_runs(Path(args.results))
    for why in listing.damaged.values():  # the others are listed; each damaged one on a line of its own
        print(f"harness: warning: not listed: {why.worded_for_cli()}", file=sys.stderr)
    heads = [headline(run) for run in listing.runs]
    if args.json:
        print_json([dataclasses.asdict(h) for h in heads])
        return 0
    evals = [h for h in heads if isinstance(h, EvalHeadline)]
    streams = [h for h in heads if not isinstance(h, EvalHeadline)]
    console = stdout_console()
    if evals or not streams:
        table = Table(title=f"runs in {args.results}", title_justify="left")
        for column in ("run", "model", "board", "n", "device acc %", "agree %", "latency", "arena B"):
            table.add_column(column, justify="left" if column in ("run", "model", "board") else "right")
        for h in evals:
            table.add_row(
                h.run_id,
                h.model,
                h.board,
                str(h.samples),
                "n/a" if h.device_accuracy is None else f"{100 * h.device_accuracy:.1f}",
                "n/a" if h.agreement is None else f"{100 * h.agreement:.1f}",
                latency_cell(h),
                "not reported" if h.arena_used is None else f"{h.arena_used} ({h.arena_source})",
            )
        console.print(table)
    if streams:
        table = Table(title=f"stream runs in {args.results}", title_justify="left")
        columns = ("run", "model", "board", "audio s", "detections", "device = host", "hits / events")
        for column in (*columns, "false alarms / h", "pipeline"):
            table.add_column(column, justify="left" if column in ("run", "model", "board") else "right")
        for h in streams:
            if h.pipeline_instructions is not None:
                pipeline = f"{h.pipeline_instructions:,} instr ({h.pipeline_source})"
            elif h.pipeline_seconds is not None:
                pipeline = f"{h.pipeline_seconds:.2f} s ({h.pipeline_source})"
            else:
                pipeline = f"n/a ({h.pipeline_source})"
            scored = h.events is not None
            table.add_row(
                h.run_id,
                h.model,
                h.board,
                f"{h.audio_ms / 1000:g}",
                str(h.detections),
                "yes" if h.device_equals_host else "NO",
                f"{h.hits} / {h.events}" if scored else "not scored",
                f"{h.false_alarms_per_hour:.2f} ({h.false_alarms})" if scored else "not scored",
                pipeline,
            )
        console.print(table)
    return 0


def cmd_report(args) -> int:
    from harness.results.html_report import write_report
    from harness.results.runs import load_run

    out = write_report([load_run(spec, Path(args.results)) for spec in args.runs], Path(args.out))
    if args.json:
        print_json({"report": str(out)})
    elif not args.quiet:
        print(f"report: {out}")
    return 0


def cmd_compare(args) -> int:
    from harness.results.compare import compare_runs
    from harness.results.runs import load_run

    result = compare_runs(
        load_run(args.run_a, Path(args.results)), load_run(args.run_b, Path(args.results)), args.latency_tolerance
    )
    if args.json:
        print_json(result)
        return 0
    console = stdout_console()
    flips = "" if result["anomaly"] else f", {result['prediction_flips']} device prediction flips"
    console.print(
        f"{result['run_a']} → {result['run_b']}: {result['paired_samples']} paired samples{flips}", highlight=False
    )
    for name, s in result["subsets"].items():
        verdict = "SIGNIFICANT" if s["significant"] else "not significant"
        if s["n_paired"] == 0:
            console.print(f"  {name}: accuracy n/a (no paired samples)", highlight=False)
            continue
        console.print(
            f"  {name}: accuracy {percent(s['accuracy_a'])} → {percent(s['accuracy_b'])} % "
            f"(McNemar p = {s['mcnemar_p']:.3g}, {verdict})",
            highlight=False,
        )
    if result["anomaly"]:
        change = result["anomaly"]

        def shown(value, form):
            return "n/a" if value is None else format(value, form)

        console.print(
            f"  anomaly over files ({change['files_a']} → {change['files_b']}): AUC {shown(change['auc_a'], '.3f')} → "
            f"{shown(change['auc_b'], '.3f')}, Top-1 {shown(change['top1_percent_a'], '.1f')} → "
            f"{shown(change['top1_percent_b'], '.1f')} % (figures over files: no significance test)",
            highlight=False,
        )
    lat = result["latency"]
    sources = lat["source_a"] if lat["source_a"] == lat["source_b"] else f"{lat['source_a']} → {lat['source_b']}"
    if "median_a" not in lat:
        console.print(f"  latency ({sources}): {lat['note']}", highlight=False)
    else:
        verdict = (
            lat["note"]
            if lat["significant"] is None
            else f"{'SIGNIFICANT' if lat['significant'] else 'not significant'} at ±{lat['tolerance']:.0%}"
        )
        console.print(
            f"  latency ({lat['unit']}, {sources}): median {lat['median_a']:,.1f} → {lat['median_b']:,.1f} "
            f"({lat['relative_change']:+.1%}, 95 % CI {lat['ci95'][0]:+.1%} … {lat['ci95'][1]:+.1%}; {verdict})",
            highlight=False,
        )
    arena = result["arena"]
    if arena["used_delta"] is None:
        console.print(f"  arena used: {arena['note']}", highlight=False)
    else:
        console.print(f"  arena used ({arena['source_a']}): {arena['used_delta']:+,} bytes", highlight=False)
    return 0


def cmd_check(args) -> int:
    from harness.eval.subsets import gate_subsets
    from harness.results.gates import check_gates, junit_xml
    from harness.results.gates_file import load_gates
    from harness.results.runs import load_run

    results_root = Path(args.results)
    run = load_run(args.run, results_root)
    baseline = load_run(args.baseline, results_root) if args.baseline else None
    gates = load_gates(Path(args.gates))
    # a gate the run cannot have, or a subset table naming no subset of the run's task: exit 2
    results = check_gates(run, gates, baseline, strict=args.strict, subsets=gate_subsets(run))
    if args.junit:
        junit = Path(args.junit)
        try:
            write_atomically(junit, lambda partial: partial.write_text(junit_xml(run, results)))
        except OSError as exc:
            raise UserError(f"cannot write --junit {junit} ({exc.strerror}); name a writable file") from exc
    if args.json:
        print_json([r.as_dict() for r in results])
    else:
        console = stdout_console()
        for r in results:
            if not args.quiet or not r.passed:
                console.print(f"{VERDICTS[r.status]} {r.name}: {r.detail}", highlight=False)
    return exits.FAILED if any(r.status == "failed" for r in results) else exits.OK


VERDICTS = {"passed": "PASS", "failed": "FAIL", "not judged": "NOT JUDGED"}


def cmd_score(args) -> int:
    from harness.eval.score_file import default_subsets, score_file, score_labels
    from harness.results.record import Score, SubsetResult, parse
    from harness.results.report import pool_note

    labels = score_labels(Path(args.labels), args.clean_labels)
    subsets = parse_subsets(args.subset) if args.subset else default_subsets(labels)
    result = score_file(labels, Path(args.predictions), subsets)
    result["flag_contradictions"] = _warn_of_labels(labels, subsets)
    if args.json:
        print_json(result)
        return 0
    console = stdout_console()
    console.print(
        f"{result['scored']} predictions scored ({result['without_prediction']} labelled images without one)",
        highlight=False,
    )
    for name, s in result["subsets"].items():
        console.print(
            f"  {name:22} n={s['n']:<6} accuracy {percent(s['accuracy'])} % "
            f"(95 % CI {percent_interval(s['accuracy_ci95'])})  f1_wv {percent(s['f1_wv'])} %  "
            f"f1_counts {percent(s['f1_counts'])} %",
            highlight=False,
        )
    scored = {name: SubsetResult(device=parse(Score, s)) for name, s in result["subsets"].items()}
    note = pool_note(scored, "predict every pool member")
    if note:
        console.print(note, highlight=False)
    return 0
