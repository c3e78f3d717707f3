"""`harness eval` (and --resume), and the commands that read runs: runs, report, compare, check, score."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli import exits
from harness.console import percent, percent_interval, print_json, stdout_console
from harness.errors import UserError
from harness.eval.settings import EvalSettings
from harness.eval.subsets import parse_subsets
from harness.files import check_output, write_atomically

if TYPE_CHECKING:
    from harness.results.comparison import PairedSubset


def _refuse_settings_with_resume(args) -> None:
    """`--resume RUN` continues with the settings the run started with: only --results, --json and --quiet
    may come from this command."""
    import dataclasses

    from harness.errors import cli_flag

    for f in dataclasses.fields(EvalSettings):  # a differing one would be ignored
        if getattr(args, f.name) != f.default:
            flag = f.metadata["flag"].flag or cli_flag(f.name)
            raise UserError(
                f"--resume {args.resume} continues the run with the settings it started with: drop {flag} "
                "(only --results, --json and --quiet may be given with --resume)"
            )


def _say(line: str) -> None:
    print(f"harness: {line}", file=sys.stderr)


def _warn_of_labels(dataset, subsets) -> int:
    """On stderr: what the labels of a scored file say once (harness/eval/subsets.py label_notes)."""
    from harness.eval.subsets import label_notes

    notes, contradictions = label_notes(dataset, subsets)
    for line in notes:
        _say(line)
    return contradictions


def cmd_eval(args) -> int:
    from harness.api.evaluation import evaluate_settings, resume
    from harness.results.report import print_summary
    from harness.results.schema import to_json
    from harness.results.store import results_root

    progress = not (args.quiet or args.json)
    results_root(args.results)  # as given: Path('') would be the working folder
    if args.resume is not None:
        _refuse_settings_with_resume(args)
        run = resume(args.resume, args.results, progress=progress, notes=_say)
    else:  # a drawn shuffle seed is kept with the settings, so a resumed run keeps the same order
        run = evaluate_settings(EvalSettings.from_args(args), Path(args.results), progress=progress, notes=_say)
    if args.json:
        print_json(to_json(run.summary) | {"run_dir": str(run.path)})
    elif args.quiet:
        print(run.path)
    else:
        print_summary(run.summary, run.path)
    return 0


def cmd_runs(args) -> int:
    import dataclasses

    from harness.results.runs import EvalHeadline, headline, scan_runs
    from harness.results.store import results_text

    listing = scan_runs(results_text(args.results))
    damaged = {name: why.worded_for_cli() for name, why in listing.damaged.items()}  # listed too, as damaged
    heads = [headline(run) for run in listing.runs]
    numbers = {id(h): n for n, h in enumerate(heads, 1)}  # one list, oldest first (harness/results/run_refs.py)
    if args.json:
        for why in damaged.values():  # a person reading stderr hears of it too
            print(f"harness: warning: listed as damaged: {why}", file=sys.stderr)
        rows = [{"number": numbers[id(h)]} | dataclasses.asdict(h) | {"damaged": None} for h in heads]
        print_json(
            rows + [{"number": None, "run_id": name, "kind": None, "damaged": why} for name, why in damaged.items()]
        )
        return 0
    evals = [h for h in heads if isinstance(h, EvalHeadline)]
    streams = [h for h in heads if not isinstance(h, EvalHeadline)]
    console = stdout_console()
    if evals or not (streams or damaged):
        keys = [(numbers[id(h)], h.run_id) for h in evals]
        console.print(_keyed_tables(f"runs in {args.results}", keys, _eval_columns(evals)))
    if streams:
        title = f"stream runs in {args.results}"
        console.print(_keyed_tables(title, [(numbers[id(h)], h.run_id) for h in streams], _stream_columns(streams)))
    if damaged:
        console.print(_damaged_tables(f"damaged runs in {args.results} (no figures: restore or remove them)", damaged))
    return 0


def _damaged_tables(title: str, damaged: dict[str, str]):
    """The damaged run folders, keyed d1, d2, … (no run number: a command cannot read them), then by key why
    each is damaged (its file and field), wrapped to the width: a reason is a sentence, a run id some 45 columns."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from harness.names import shown

    ids = Table()  # titled above it: a title wider than the table would wrap
    ids.add_column("#", justify="right", no_wrap=True)
    ids.add_column("damaged run", no_wrap=True)
    reasons = Table(title="why each is damaged: its file and field", title_justify="left")
    reasons.add_column("#", justify="right", no_wrap=True)
    reasons.add_column("problem")
    for number, (name, why) in enumerate(damaged.items(), 1):
        ids.add_row(f"d{number}", Text(shown(name)))  # a folder's name: harness did not make it
        reasons.add_row(f"d{number}", Text(why))
    return Group(Text(title, style="table.title"), ids, reasons)


def _eval_columns(evals) -> list[tuple[str, list[tuple[str, str, list[str]]]]]:
    from harness.results.cells import latency_cell

    def shown(value):
        return "n/a" if value is None else f"{100 * value:.1f}"

    scores = [
        ("model", "left", [h.model for h in evals]),
        ("board", "left", [h.board for h in evals]),
        ("n", "right", [str(h.samples) for h in evals]),
        ("device\nacc %", "right", [shown(h.device_accuracy) for h in evals]),
        ("95 % CI\n(Wilson)", "right", [percent_interval(h.device_accuracy_ci95) for h in evals]),
        ("agree\n%", "right", [shown(h.agreement) for h in evals]),
    ]
    costs = [
        ("first subset", "left", [h.subsets.split(",")[0] for h in evals]),
        ("latency", "right", [latency_cell(h) for h in evals]),
        (
            "arena B",
            "right",
            ["not reported" if h.arena_used is None else f"{h.arena_used} ({h.arena_source})" for h in evals],
        ),
    ]
    return [("device on each run's first subset, against the host", scores), ("latency and arena", costs)]


def _stream_columns(streams) -> list[tuple[str, list[tuple[str, str, list[str]]]]]:
    def pipeline(h) -> str:
        if h.pipeline_instructions is not None:
            return f"{h.pipeline_instructions:,} instr ({h.pipeline_source})"
        if h.pipeline_seconds is not None:
            return f"{h.pipeline_seconds:.2f} s ({h.pipeline_source})"
        return f"n/a ({h.pipeline_source})"

    scored = [h.events is not None for h in streams]
    what = [
        ("model", "left", [h.model for h in streams]),
        ("board", "left", [h.board for h in streams]),
        ("audio s", "right", [f"{h.audio_ms / 1000:g}" for h in streams]),
        ("detections", "right", [str(h.detections) for h in streams]),
        ("device\n= host", "right", ["yes" if h.device_equals_host else "NO" for h in streams]),
    ]
    scores = [
        (
            "hits / events",
            "right",
            [f"{h.hits} / {h.events}" if s else "not scored" for h, s in zip(streams, scored, strict=True)],
        ),
        (
            "false alarms / h",
            "right",
            [
                f"{h.false_alarms_per_hour:.2f} ({h.false_alarms})" if s else "not scored"
                for h, s in zip(streams, scored, strict=True)
            ],
        ),
        ("pipeline", "right", [pipeline(h) for h in streams]),
    ]
    return [("detections", what), ("scores (optimal policy) and pipeline time", scores)]


def _keyed_tables(title: str, runs: list[tuple[int, str]], groups):
    """A table of the runs' ids with their numbers (eval and stream runs numbered in one list: the number a
    command takes for the run), then a table per group of columns keyed by that number: a run id alone is some
    45 columns, too wide to share a row of an 80-column table with the figures."""
    from rich.console import Group
    from rich.table import Table

    ids = Table(title=title, title_justify="left")
    ids.add_column("#", justify="right", no_wrap=True)
    ids.add_column("run", no_wrap=True)
    for number, run_id in runs:
        ids.add_row(str(number), run_id)
    tables = [ids]
    for group_title, columns in groups:
        table = Table(title=group_title, title_justify="left")
        table.add_column("#", justify="right", no_wrap=True)
        for header, justify, _ in columns:
            table.add_column(header, justify=justify, no_wrap=True)
        for row, (number, _) in enumerate(runs):
            table.add_row(str(number), *(cells[row] for _, _, cells in columns))
        tables.append(table)
    return Group(*tables)


def cmd_report(args) -> int:
    from harness.eval.subsets import judge_gates
    from harness.results.gates_file import load_gates
    from harness.results.glance import gated
    from harness.results.html_report import require_writable, write_report
    from harness.results.runs import load_run
    from harness.results.store import results_text

    require_writable(Path(args.out))  # a device, a FIFO or a folder is refused before any run is read
    if args.baseline and not args.gates:
        raise UserError("--baseline is what the gates compare with: pass --gates FILE with it")
    gates = load_gates(Path(args.gates)) if args.gates else None
    root = results_text(args.results)
    baseline = load_run(args.baseline, root) if args.baseline else None
    runs = [load_run(spec, root) for spec in args.runs]
    verdicts = gated(runs, lambda run: judge_gates(run, gates, baseline)) if gates else {}
    out = write_report(runs, Path(args.out), verdicts, baseline)
    if args.json:
        print_json({"report": str(out)})
    elif not args.quiet:
        print(f"report: {out}")
    return 0


def cmd_compare(args) -> int:
    from harness.results.compare import compare_runs
    from harness.results.runs import load_run
    from harness.results.store import results_text

    result = compare_runs(
        load_run(args.run_a, results_text(args.results)),
        load_run(args.run_b, results_text(args.results)),
        args.latency_tolerance,
    )
    if args.json:
        print_json(result.as_json())
        return 0
    console = stdout_console()
    flips = "" if result.anomaly else f", {result.prediction_flips} device prediction flips"
    console.print(f"A: {result.run_a}\nB: {result.run_b}", highlight=False)
    console.print(f"{result.paired_samples} paired samples{flips}", highlight=False)
    if result.apart:
        console.print(f"  accuracy: {result.apart}", highlight=False)
    elif result.compared:
        console.print(_compare_tables(result.compared))
        for name, s in result.subsets.items():
            if s.n_paired == 0:
                console.print(f"  {name}: accuracy n/a (no paired samples)", highlight=False)
    if result.anomaly:
        change = result.anomaly

        def shown(value, form):
            return "n/a" if value is None else format(value, form)

        console.print(
            f"  anomaly over files ({change['files_a']} → {change['files_b']}): AUC {shown(change['auc_a'], '.3f')} → "
            f"{shown(change['auc_b'], '.3f')}, Top-1 {shown(change['top1_percent_a'], '.1f')} → "
            f"{shown(change['top1_percent_b'], '.1f')} % (figures over files: no significance test)",
            highlight=False,
        )
    lat = result.latency
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
    arena = result.arena
    if arena["used_delta"] is None:
        console.print(f"  arena used: {arena['note']}", highlight=False)
    else:
        console.print(f"  arena used ({arena['source_a']}): {arena['used_delta']:+,} bytes", highlight=False)
    return 0


def _compare_tables(subsets: "dict[str, PairedSubset]"):
    """Each subset's device accuracy in A and in B on the paired samples, each with its Wilson 95 % interval,
    then McNemar's test on them: two tables, so that both fit 80 columns with a subset's name whole."""
    from rich.console import Group
    from rich.table import Table

    scores = Table(title="device accuracy on the paired samples", title_justify="left")
    scores.add_column("subset", no_wrap=True)
    scores.add_column("n", justify="right", no_wrap=True)
    for run in ("A", "B"):
        scores.add_column(f"{run}\nacc %", justify="right", no_wrap=True)
        scores.add_column("95 % CI\n(Wilson)", justify="right", no_wrap=True)
    tests = Table(title="McNemar's test (exact) on the paired predictions", title_justify="left")
    tests.add_column("subset", no_wrap=True)
    for column in ("only A\nright", "only B\nright", "p"):
        tests.add_column(column, justify="right", no_wrap=True)
    tests.add_column("verdict", no_wrap=True)
    for name, s in subsets.items():
        scores.add_row(
            name,
            str(s.n_paired),
            percent(s.accuracy_a),
            percent_interval(s.accuracy_ci95_a),
            percent(s.accuracy_b),
            percent_interval(s.accuracy_ci95_b),
        )
        verdict = "SIGNIFICANT" if s.significant else "not significant"
        tests.add_row(name, str(s.only_a_correct), str(s.only_b_correct), f"{s.mcnemar_p:.3g}", verdict)
    return Group(scores, tests)


def cmd_check(args) -> int:
    from harness.eval.subsets import judge_gates
    from harness.results.gates_file import load_gates
    from harness.results.junit import junit_xml
    from harness.results.runs import load_run
    from harness.results.store import results_text

    results_root = results_text(args.results)
    if args.junit:
        check_output(args.junit, "--junit")  # a device, a FIFO or a folder is refused before any gate is judged
    run = load_run(args.run, results_root)
    baseline = load_run(args.baseline, results_root) if args.baseline else None
    gates = load_gates(Path(args.gates))
    # a gate the run cannot have, or a subset table naming no subset of the run's task: exit 2
    results = judge_gates(run, gates, baseline, strict=args.strict)
    if args.junit:
        junit = Path(args.junit)
        try:
            write_atomically(junit, lambda partial: partial.write_text(junit_xml(run, results)), "--junit")
        except OSError as exc:
            raise UserError(f"cannot write --junit {junit} ({exc.strerror}); name a writable file") from exc
    if args.json:
        print_json([r.as_dict() for r in results])
    else:
        console = stdout_console()
        for r in results:
            if not args.quiet or not r.passed:
                console.print(f"{VERDICTS[r.status]} {r.name}: {r.detail}", highlight=False, markup=False)
    return exits.FAILED if any(r.status == "failed" for r in results) else exits.OK


VERDICTS = {"passed": "PASS", "failed": "FAIL", "not judged": "NOT JUDGED"}


def cmd_score(args) -> int:
    from harness.eval.score_file import default_subsets, score_file, score_labels
    from harness.results.report import pool_note
    from harness.results.schema import parse
    from harness.results.summary import Score, SubsetResult

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
