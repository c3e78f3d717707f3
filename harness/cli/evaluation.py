"""`harness eval` (and --resume), and the commands that read runs: runs, report, compare, check, score."""

import argparse
import dataclasses
from pathlib import Path

from harness.cli.args import board_with_link_options, emulated_tflm_tree, order_seed
from harness.console import percent, print_json, stdout_console
from harness.errors import UserError
from harness.eval.convert import converted_for_eval
from harness.eval.subsets import parse_subsets
from harness.eval.tasks import task_for
from harness.files import write_atomically
from harness.model.card import check_card_model, load_card
from harness.model.convert import is_float_model
from harness.model.deployable import require_deployable
from harness.model.fetch import obtain_model
from harness.model.tflite_file import read_tflite

# What `harness eval --resume` needs to run the same evaluation again, kept in the run's partial folder.
EVAL_SETTINGS = [
    "board",
    "model",
    "model_file",
    "port",
    "serial",
    "dataset",
    "subset",
    "split",
    "limit",
    "pools",
    "strict",
    "references",
    "tflm",
    "protocol",
    "link_baud",
    "emulate_invoke_ms",
    "switch_baud",
    "faults",
    "labgrid_place",
    "meter",
    "order_seed",
]


def eval_settings(args) -> dict:
    settings = {name: getattr(args, name) for name in EVAL_SETTINGS}
    settings["references"] = list(args.references)
    settings["faults"] = dataclasses.asdict(args.faults) if args.faults else None
    return settings


def resumed_args(args):
    """The settings the run was started with; only --results, --json and --quiet come from this command."""
    from harness.link.faults import FaultSpec
    from harness.results.journal import load_request
    from harness.results.store import partial_path, resume_target

    root, run_id = resume_target(Path(args.results), args.resume)
    folder = partial_path(root, run_id)
    if not folder.is_dir():
        done = " (it finished already)" if (root / run_id).is_dir() else ""
        raise UserError(f"no unfinished run {run_id} in {root}{done}; `harness runs --results {root}` lists runs")
    settings = load_request(folder)
    resumed = argparse.Namespace(**(vars(args) | settings))
    resumed.references = tuple(settings["references"])
    resumed.faults = FaultSpec(**settings["faults"]) if settings["faults"] else None
    resumed.results, resumed.run_id = str(root), run_id
    return resumed


def cmd_eval(args) -> int:
    from harness.eval.runner import EvalRequest, run_eval
    from harness.results.report import print_summary

    if args.resume:
        args = resumed_args(args)
    else:  # a drawn shuffle seed is kept with the settings, so a resumed run keeps the same order
        args = argparse.Namespace(**vars(args), run_id=None, order_seed=order_seed(args.shuffle))
    board = board_with_link_options(args)
    card = load_card(args.model)
    task = task_for(card)
    subsets = task.subsets(args.subset)
    splits = [x.strip() for x in args.split.split(",") if x.strip()] if args.split else None
    dataset = task.load_dataset(args.dataset, splits, subsets, args.limit)
    model_path = Path(args.model_file) if args.model_file else obtain_model(card)
    converted_from = None
    own_file = not args.model_file
    if is_float_model(model_path):
        conversion = converted_for_eval(model_path, card, dataset)
        model_path, converted_from, own_file = conversion.path, conversion.provenance(), False
    model = read_tflite(model_path)
    require_deployable(model, board)
    check_card_model(card, model, own_file)  # before the run: a card that does not fit leaves nothing behind
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
        tflm=emulated_tflm_tree(args, board),
        serial_number=args.serial,
        pools=args.pools,
        strict=args.strict,
        meter=args.meter,
        order_seed=args.order_seed,
        protocol=args.protocol,
        faults=args.faults,
        run_id=args.run_id,
        settings=eval_settings(args),
        labgrid_place=args.labgrid_place,
        converted_from=converted_from,
    )
    summary = run_eval(request)
    if args.json:
        print_json(summary)
    elif args.quiet:
        print(summary["run_dir"])
    else:
        print_summary(summary)
    return 0


def cmd_runs(args) -> int:
    from rich.table import Table

    from harness.results.runs import list_runs

    heads = [run.headline() for run in list_runs(Path(args.results))]
    if args.json:
        print_json(heads)
        return 0
    table = Table(title=f"runs in {args.results}", title_justify="left")
    for column in ("run", "model", "board", "n", "device acc %", "agree %", "latency", "arena B"):
        table.add_column(column, justify="left" if column in ("run", "model", "board") else "right")
    for h in heads:
        latency = (
            f"{h['instructions_median']:,.0f} instr"
            if h["instructions_median"]
            else (f"{h['latency_median_us'] / 1000:.2f} ms" if h["latency_median_us"] else "n/a")
        )
        table.add_row(
            h["run_id"],
            h["model"],
            h["board"],
            str(h["samples"]),
            "n/a" if h["device_accuracy"] is None else f"{100 * h['device_accuracy']:.1f}",
            "n/a" if h["agreement"] is None else f"{100 * h['agreement']:.1f}",
            f"{latency} ({h['latency_source']})",
            "not reported" if h["arena_used"] is None else f"{h['arena_used']} ({h['arena_source']})",
        )
    stdout_console().print(table)
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
    console.print(
        f"{result['run_a']} → {result['run_b']}: {result['paired_samples']} paired samples, "
        f"{result['prediction_flips']} device prediction flips",
        highlight=False,
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
    from harness.results.gates import check_gates, junit_xml, load_gates
    from harness.results.runs import load_run

    results_root = Path(args.results)
    run = load_run(args.run, results_root)
    baseline = load_run(args.baseline, results_root) if args.baseline else None
    results = check_gates(run, load_gates(Path(args.gates)), baseline)
    if args.junit:
        junit = Path(args.junit)
        try:
            write_atomically(junit, lambda partial: partial.write_text(junit_xml(run, results)))
        except OSError as exc:
            raise UserError(f"cannot write --junit {junit} ({exc.strerror}); name a writable file") from exc
    if args.json:
        print_json([vars(r) for r in results])
    else:
        console = stdout_console()
        for r in results:
            if not args.quiet or not r.passed:
                console.print(f"{'PASS' if r.passed else 'FAIL'} {r.name}: {r.detail}", highlight=False)
    return 0 if all(r.passed for r in results) else 1


def cmd_score(args) -> int:
    from harness.eval.score_file import score_file
    from harness.results.report import pool_note

    result = score_file(Path(args.labels), Path(args.predictions), parse_subsets(args.subset))
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
            f"  {name:22} n={s['n']:<6} accuracy {percent(s['accuracy'])} %  f1_wv {percent(s['f1_wv'])} %  "
            f"f1_counts {percent(s['f1_counts'])} %",
            highlight=False,
        )
    note = pool_note({name: {"device": s} for name, s in result["subsets"].items()}, "predict every pool member")
    if note:
        console.print(note, highlight=False)
    return 0
