"""The `harness` command line."""

import argparse
import dataclasses
import math
import os
import sys
from pathlib import Path

from harness import __version__, console
from harness.boards import all_boards, get_board
from harness.console import percent, print_json, stdout_console
from harness.errors import BuildError, LinkError, UserError
from harness.eval.dataset import DEMO, load_dataset
from harness.eval.subsets import SUBSETS, parse_subsets
from harness.eval.tasks import task_for
from harness.model.card import DEFAULT_MODEL, all_cards, load_card
from harness.model.convert import converted_for_eval, is_float_model
from harness.model.deployable import require_deployable
from harness.model.fetch import obtain_model
from harness.model.references import DEFAULT_REFERENCES, REFERENCES
from harness.model.tflite_file import read_tflite
from harness.stream.pipeline import streaming_frontend

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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
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


def _eval_settings(args) -> dict:
    settings = {name: getattr(args, name) for name in EVAL_SETTINGS}
    settings["references"] = list(args.references)
    settings["faults"] = dataclasses.asdict(args.faults) if args.faults else None
    return settings


def _resumed_args(args):
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


def _cmd_eval(args) -> int:
    from harness.eval.runner import EvalRequest, run_eval
    from harness.results.report import print_summary

    if args.resume:
        args = _resumed_args(args)
    else:  # a drawn shuffle seed is kept with the settings, so a resumed run keeps the same order
        args = argparse.Namespace(**vars(args), run_id=None, order_seed=_order_seed(args.shuffle))
    board = _board_with_link_options(args)
    card = load_card(args.model)
    task = task_for(card)
    subsets = task.subsets(args.subset)
    splits = [x.strip() for x in args.split.split(",") if x.strip()] if args.split else None
    dataset = task.load_dataset(args.dataset, splits, subsets, args.limit)
    model_path = Path(args.model_file) if args.model_file else obtain_model(card)
    if is_float_model(model_path):
        model_path = converted_for_eval(model_path, card, dataset)
    model = read_tflite(model_path)
    require_deployable(model, board)
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
        serial_number=args.serial,
        pools=args.pools,
        strict=args.strict,
        meter=args.meter,
        order_seed=args.order_seed,
        protocol=args.protocol,
        faults=args.faults,
        run_id=args.run_id,
        settings=_eval_settings(args),
        labgrid_place=args.labgrid_place,
    )
    summary = run_eval(request)
    if args.json:
        print_json(summary)
    elif args.quiet:
        print(summary["run_dir"])
    else:
        print_summary(summary)
    return 0


def _cmd_link_test(args) -> int:
    from harness.console import progress
    from harness.device.launch import connect
    from harness.link.selftest import describe, run_link_test

    board = _board_with_link_options(args)
    with (
        connect(board, None, args.port, faults=args.faults, labgrid_place=args.labgrid_place) as client,
        progress(args.bytes, f"link-test {board.id}") as advance,
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
    return 0 if report.ok else 1


def _cmd_flash(args) -> int:
    from harness.device.launch import connect

    board = get_board(args.board)
    console = stdout_console()
    if board.kind == "virtual":
        console.print("the virtual board runs the model each command names; there is nothing to flash")
        return 0
    if board.kind == "device":
        return _flash_device(args, board, console)
    tflm = _tflm_tree(args)
    model = None
    if tflm is not None:
        card = load_card(args.model)
        model = read_tflite(Path(args.model_file) if args.model_file else obtain_model(card))
        require_deployable(model, board)
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


def _model_for(args, board):
    """The card and its model, checked to be deployable on the board."""
    card = load_card(args.model)
    model = read_tflite(Path(args.model_file) if args.model_file else obtain_model(card))
    require_deployable(model, board)
    return card, model


def _cmd_perf(args) -> int:
    from harness.device.launch import connect
    from harness.eval.perf import run_perf, sample_input

    board = get_board(args.board)
    card, model = _model_for(args, board)
    data = sample_input(card, model, load_dataset(args.dataset))
    with connect(board, model, args.port, _tflm_tree(args)) as client:
        report = run_perf(client, board, data, args.runs, args.warmups, args.mlperf)
    stats = report.stats()
    if args.json:
        print_json(dataclasses.asdict(report) | {"stats": stats})
        return 0
    console = stdout_console()
    console.print(
        f"{board.id}: {len(report.runs)} invokes after {report.warmups} warm-ups, {report.unit} ({report.source}): "
        f"min {stats['min']:,.1f}, median {stats['median']:,.1f}, p95 {stats['p95']:,.1f}, max {stats['max']:,.1f}",
        highlight=False,
    )
    if report.mlperf_windows:
        console.print(
            f"  MLPerf-style: median of {len(report.mlperf_windows)} windows of >= 10 s: "
            f"{float(sorted(report.mlperf_windows)[len(report.mlperf_windows) // 2]):,.1f} {report.unit}",
            highlight=False,
        )
    return 0


def _cmd_profile(args) -> int:
    from rich.table import Table

    from harness.device.launch import connect
    from harness.eval.perf import run_profile, sample_input

    board = get_board(args.board)
    card, model = _model_for(args, board)
    data = sample_input(card, model, load_dataset(args.dataset))
    with connect(board, model, args.port, _tflm_tree(args)) as client:
        report = run_profile(client, board, data)
    if args.json:
        print_json(dataclasses.asdict(report) | {"coverage": report.coverage})
        return 0
    table = Table(title=f"{card.name} on {board.id}: {report.total.text()} per invoke ({report.total.source})")
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


def _cmd_runs(args) -> int:
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
            str(h["arena_used"]),
        )
    stdout_console().print(table)
    return 0


def _cmd_report(args) -> int:
    from harness.results.html_report import write_report
    from harness.results.runs import load_run

    out = write_report([load_run(spec, Path(args.results)) for spec in args.runs], Path(args.out))
    if args.json:
        print_json({"report": str(out)})
    elif not args.quiet:
        print(f"report: {out}")
    return 0


def _cmd_compare(args) -> int:
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
        console.print(
            f"  {name}: accuracy {100 * s['accuracy_a']:.1f} → {100 * s['accuracy_b']:.1f} % "
            f"(McNemar p = {s['mcnemar_p']:.3g}, {verdict})",
            highlight=False,
        )
    lat = result["latency"]
    if "median_a" not in lat:
        console.print(f"  latency: {lat['note']}", highlight=False)
    else:
        verdict = (
            lat["note"]
            if lat["significant"] is None
            else f"{'SIGNIFICANT' if lat['significant'] else 'not significant'} at ±{lat['tolerance']:.0%}"
        )
        console.print(
            f"  latency ({lat['unit']}, {lat['source_a']}): median {lat['median_a']:,.1f} → {lat['median_b']:,.1f} "
            f"({lat['relative_change']:+.1%}, 95 % CI {lat['ci95'][0]:+.1%} … {lat['ci95'][1]:+.1%}; {verdict})",
            highlight=False,
        )
    console.print(f"  arena used: {result['arena_used_delta']:+d} bytes", highlight=False)
    return 0


def _cmd_check(args) -> int:
    from harness.results.gates import check_gates, junit_xml, load_gates
    from harness.results.runs import load_run

    results_root = Path(args.results)
    run = load_run(args.run, results_root)
    baseline = load_run(args.baseline, results_root) if args.baseline else None
    results = check_gates(run, load_gates(Path(args.gates)), baseline)
    if args.junit:
        Path(args.junit).write_text(junit_xml(run, results))
    if args.json:
        print_json([vars(r) for r in results])
    else:
        console = stdout_console()
        for r in results:
            if not args.quiet or not r.passed:
                console.print(f"{'PASS' if r.passed else 'FAIL'} {r.name}: {r.detail}", highlight=False)
    return 0 if all(r.passed for r in results) else 1


def _flash_device(args, board, console) -> int:
    from harness.device.launch import connect
    from harness.firmware.platformio import generate_project, upload

    card, model = _model_for(args, board)
    project = generate_project(board, model, card.name, _tflm_tree(args), Path(args.out), streaming_frontend(card))
    port = None if args.port in (None, "auto") else args.port
    upload(project, port)
    with connect(board, model, port, serial_number=args.serial) as client:
        info = client.info
    if info.model_sha256_prefix != model.sha256[:16] or info.build_id != project.build_id:
        raise UserError(
            f"{board.id} answers with model {info.model_sha256_prefix}… and firmware {info.build_id}, expected "
            f"{model.sha256[:16]}… and {project.build_id}: the upload did not take; check the port and the probe"
        )
    console.print(
        f"{board.id}: flashed {project.build_id} ({project.kernels} kernels), model {card.name}", highlight=False
    )
    return 0


def _cmd_generate(args) -> int:
    from harness.firmware.platformio import generate_project

    board = get_board(args.board)
    card, model = _model_for(args, board)
    project = generate_project(board, model, card.name, _tflm_tree(args), Path(args.out), streaming_frontend(card))
    if args.json:
        print_json({"project": str(project.path), "build_id": project.build_id, "kernels": project.kernels})
    else:
        print(project.path)
    return 0


def _cmd_score(args) -> int:
    from harness.eval.score_file import score_file

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
    return 0


def _cmd_dataset_build(args) -> int:
    from harness.eval.dataset_build import build_dataset

    labels, count = build_dataset(Path(args.annotations), Path(args.images), Path(args.out))
    if args.json:
        print_json({"labels": str(labels), "images": count})
    else:
        print(f"{count} images labelled: {labels}")
    return 0


def _cmd_inspect(args) -> int:
    from rich.table import Table

    from harness.model.inspect import inspect_model

    if args.model.endswith(".tflite"):
        model = read_tflite(Path(args.model))
    else:
        card = load_card(args.model)
        path = obtain_model(card)
        if is_float_model(path):  # what would run on a board is its int8 conversion
            path = converted_for_eval(path, card, load_dataset(DEMO))
        model = read_tflite(path)
    boards = [get_board(args.board)] if args.board else ([] if args.no_fit else list(all_boards().values()))
    result = inspect_model(model, boards)
    if args.json:
        print_json(result.as_dict())
        return 0
    console = stdout_console()
    console.print(
        f"{result.model}: {result.flatbuffer_bytes:,} bytes, {result.input} -> {result.output}\n"
        f"  {result.parameters:,} parameters, {result.macs:,} MACs (conv and fully connected layers), "
        f"{len(result.layers)} operators: " + ", ".join(f"{n} {op}" for op, n in result.operators.items()) + "\n"
        f"  arena {result.arena_estimate:,} bytes ({result.arena_source})",
        highlight=False,
    )
    if args.layers:
        layers = Table(title="layers")
        for column in ("#", "operator", "output", "MACs"):
            layers.add_column(column, justify="left" if column == "operator" else "right")
        for layer in result.layers:
            layers.add_row(str(layer.index), layer.operator, str(layer.output_shape), f"{layer.macs:,}")
        console.print(layers)
    if result.fits:
        table = Table(title="fit (flash: model + a 128 KiB code allowance; RAM: the arena)")
        for column in ("board", "fits", "flash needed / available", "arena needed / available", "arena margin"):
            table.add_column(column, justify="left" if column in ("board", "fits") else "right")
        for fit in result.fits:
            table.add_row(
                fit.board,
                "yes" if fit.fits else "NO",
                f"{fit.flash_needed:,} / {fit.flash_available:,}",
                f"{fit.arena_needed:,} / {fit.arena_available:,}",
                f"{fit.arena_available - fit.arena_needed:+,}",
            )
        console.print(table)
    return 0


def _cmd_convert(args) -> int:
    from harness.model.convert import convert

    card = load_card(args.card)
    source = Path(args.model) if args.model else obtain_model(card)
    dataset = load_dataset(args.dataset)
    result = convert(source, card, dataset, parse_subsets(args.subset), args.samples, args.io, Path(args.out))
    report = dataclasses.asdict(result) | {"out": str(result.out)}
    if args.reference:
        report["reference"] = _agreement_with(result.out, load_card(args.reference), card, dataset)
    if args.json:
        print_json(report)
        return 0
    console = stdout_console()
    console.print(
        f"{result.out}: calibrated on {result.calibration_samples} samples; on {result.held_out} held-out samples "
        f"int8 agrees with float on {percent(result.agreement)} % (accuracy float {percent(result.float_accuracy)} %, "
        f"int8 {percent(result.int8_accuracy)} %)",
        highlight=False,
    )
    if args.reference:
        ref = report["reference"]
        console.print(
            f"top-1 agreement with {args.reference} on {ref['samples']} {dataset.name} samples: "
            f"{percent(ref['agreement'])} %",
            highlight=False,
        )
    return 0


def _agreement_with(converted: Path, reference_card, card, dataset) -> dict:
    """Top-1 agreement of the converted model with a published model, on every dataset sample."""
    from harness.eval.inputs import image_preparation, prepare_inputs
    from harness.eval.outputs import predict
    from harness.model.references import TflmReference

    ours, theirs = read_tflite(converted), read_tflite(obtain_model(reference_card))
    samples = list(dataset.samples)
    a = prepare_inputs(dataset, samples, image_preparation(card.preprocessing, ours.input))
    b = prepare_inputs(dataset, samples, image_preparation(reference_card.preprocessing, theirs.input))
    run_a, run_b = TflmReference(ours), TflmReference(theirs)
    same = sum(
        predict(run_a.run(x), ours.output, card.output)[0]
        == predict(run_b.run(y), theirs.output, reference_card.output)[0]
        for x, y in zip(a.tensors, b.tensors, strict=True)
    )
    return {"samples": len(a.samples), "agreement": same / max(1, len(a.samples))}


def _cmd_datasets(args) -> int:
    from harness.eval.dataset import describe_sources

    sources = describe_sources()
    if args.json:
        print_json(sources)
        return 0
    console = stdout_console()
    for source in sources:
        ready = "" if source["ready"] is None else (" (ready)" if source["ready"] else " (built on first use)")
        console.print(f"{source['name']:8} {source['kind']}{ready}: {source['location']}", highlight=False)
    return 0


def _cmd_boards(args) -> int:
    from harness.device.discovery import attached_boards

    attached = attached_boards(all_boards().values())
    if args.json:
        print_json({"boards": [dataclasses.asdict(b) for b in all_boards().values()], "attached": attached})
        return 0
    console = stdout_console()
    for found in attached:
        console.print(
            f"attached: {found['board']:12} {found['port']}  {found['usb_id']}  serial {found['serial_number']}",
            highlight=False,
        )
    for board in all_boards().values():
        console.print(f"{board.id:12} {board.kind:8} latency={board.latency_source:8} {board.name}")
    return 0


def _cmd_models(args) -> int:
    if args.action == "pull":
        if not args.name:
            raise UserError("`harness models pull` needs a card name; see `harness models`")
        card = load_card(args.name)
        path = obtain_model(card)  # cache, HARNESS_MODEL_MIRROR, then the source; sha256 checked
        if args.json:
            print_json({"model": card.name, "file": str(path), "sha256": card.sha256})
        else:
            print(path)
        return 0
    if args.json:
        print_json([dataclasses.asdict(c) for c in all_cards().values()])
        return 0
    console = stdout_console()
    for card in all_cards().values():
        console.print(f"{card.name:28} {card.task:22} {card.title}")
    return 0


def _order_seed(value: int | None) -> int | None:
    from harness.lpirc.order import new_seed

    return new_seed() if value == -1 else value


def _cmd_meter(args) -> int:
    import time

    from harness.energy.meter import open_meter
    from harness.energy.replay import held_energy_j
    from harness.energy.trace import JOULES_PER_WH

    with open_meter(args.meter) as meter:
        meter.start()
        if args.meter.split(":", 1)[0].lower() != "csv":
            time.sleep(args.seconds)
        trace = meter.stop()
    figures = {
        "source": trace.source,
        "meter": trace.meter,
        "samples": len(trace),
        "seconds": float(trace.t[-1] - trace.t[0]) if len(trace) else 0.0,
        "joules": trace.energy_j(),
        "wh": trace.energy_j() / JOULES_PER_WH,
        "mean_watts": trace.mean_watts(trace.t[0], trace.t[-1]) if len(trace) > 1 else None,
        "wh_from_power_readings": held_energy_j(trace) / JOULES_PER_WH if len(trace) > 1 else None,
    }
    if args.json:
        print_json(figures)
    else:
        for key, value in figures.items():
            stdout_console().print(f"{key}: {value}", highlight=False)
    return 0


def _cmd_referee(args) -> int:
    import threading
    import time
    from datetime import UTC, datetime

    from harness.energy.meter import open_live_meter
    from harness.lpirc.order import new_seed
    from harness.lpirc.referee import Referee, check_bind, load_referee_set, save_session

    check_bind(args.host, args.allow_remote, args.password)
    images = load_referee_set(args.dataset, args.subset, args.limit, args.seed if args.seed is not None else new_seed())
    meter = open_live_meter(args.meter, "the session") if args.meter else None
    try:
        referee = Referee(images, args.time_limit, args.host, args.port, args.password, meter)
    except OSError as exc:
        raise UserError(f"cannot listen on {args.host}:{args.port} ({exc.strerror}); choose another --port") from exc
    started = datetime.now(UTC).isoformat()
    threading.Thread(target=referee.serve_forever, daemon=True).start()
    print(f"referee on {referee.url}: {len(images.images)} images, {args.time_limit:g} s from login", flush=True)
    summary = None
    try:
        referee.finished.wait()
        if referee.session is not None:
            summary = save_session(referee, Path(args.results), started)
            if referee.meter_error is None:
                time.sleep(args.linger)  # late requests still get their 401
    finally:
        referee.shutdown()
        referee.server_close()
        if meter is not None:
            meter.close()
    if referee.meter_error is not None:
        saved = f"; the session without energy is in {summary['run_dir']}" if summary else ""
        raise LinkError(f"the power meter failed: {referee.meter_error}{saved}")
    if args.json:
        print_json(summary)
    else:
        metric = summary["metric"]
        value = summary["map"]["map"] if metric == "map" else summary["accuracy"]["value"]
        line = f"{metric} {value:.4f} over {summary['images']} images, {summary['results']} results in time"
        if summary["energy"]:
            score = _score_text(summary["score"]["value"])
            line += f"; {summary['energy']['wh']:.6g} Wh ({summary['energy']['source']}), score {score}"
        stdout_console().print(line, highlight=False)
        stdout_console().print(summary["run_dir"], highlight=False)
    return 0


def _score_text(score: float | None) -> str:
    return f"{score:.6g}" if score is not None else "- (no energy)"


def _cmd_lpirc_score(args) -> int:
    from harness.lpirc.scores import lpirc_scores

    roots = [Path(args.results), Path(args.results) / "referee"]
    report = lpirc_scores(args.runs, roots, args.subset, args.time_limit, args.allow_mixed_sources)
    if args.json:
        print_json(report)
        return 0
    console = stdout_console()
    for run in report["runs"]:
        console.print(
            f"{run['run_id']}: {run['metric']} {run['accuracy']:.4f}, {run['wh']:.6g} Wh "
            f"({run['energy_source']}), score {_score_text(run['score'])} per Wh",
            highlight=False,
        )
    for prize, value in report["prizes"].items():
        if isinstance(value, list):
            value = ", ".join(value) or "none"
        elif value is not None:
            value = f"{value:.6g}"
        console.print(f"{prize}: {value}", highlight=False)
    return 0


def _cmd_map(args) -> int:
    from harness.eval.detection import mean_average_precision, read_boxes

    thresholds = args.iou if args.iou == "ilsvrc" else _iou_threshold(args.iou)
    truth = read_boxes(Path(args.truth))
    detections = read_boxes(Path(args.detections))
    if args.answered_only:
        answered = {box.image for box in detections}
        truth = [box for box in truth if box.image in answered]
    result = mean_average_precision(detections, truth, thresholds, not args.continuous)
    figures = result.as_dict() | {"ap": {str(k): v for k, v in result.ap.items()}, "thresholds": args.iou}
    if args.json:
        print_json(figures)
    else:
        stdout_console().print(
            f"mAP {result.map:.4f} over {len(result.ap)} classes: {result.true_positives} true and "
            f"{result.false_positives} false positives, {result.positives} ground-truth boxes",
            highlight=False,
        )
    return 0


def _iou_threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise UserError(f"--iou {text!r} is neither 'ilsvrc' nor a number in (0, 1]")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0..65535 (0: any free port), got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number of seconds of at least 0, got {text!r}")
    return value


def _add_energy_commands(commands, output) -> None:
    detection = commands.add_parser("map", parents=[output], help="detection mAP of boxes against ground truth")
    detection.add_argument("--truth", required=True, help="ground truth, 7 columns (LPIRC golden_output layout)")
    detection.add_argument("--detections", required=True, help="detections, 7 columns (LPIRC results layout)")
    detection.add_argument("--iou", default="ilsvrc", help="'ilsvrc' (per-box thresholds, default) or e.g. 0.5")
    detection.add_argument("--continuous", action="store_true", help="widths xmax - xmin (default: inclusive +1)")
    detection.add_argument("--answered-only", action="store_true", help="only the images the detections cover")
    detection.set_defaults(handler=_cmd_map)

    meter = commands.add_parser("meter", parents=[output], help="read a power meter (or replay a log) and sum energy")
    meter.add_argument("meter", help="KIND:ADDRESS, e.g. wt310:TCPIP0::127.0.0.1::5025::SOCKET or csv:log.csv")
    meter.add_argument(
        "--seconds", type=_positive_float, default=5.0, help="how long to record a live meter (default: 5)"
    )
    meter.set_defaults(handler=_cmd_meter)

    referee = commands.add_parser("referee", parents=[output], help="serve images to a networked device, LPIRC style")
    referee.add_argument("--dataset", required=True, help="LPIRC folder (images/<n>.jpg, ground truth) or a dataset")
    referee.add_argument("--subset", help="with a harness dataset: the subset to serve (default: all)")
    referee.add_argument("--limit", type=_positive_int, help="serve at most this many images")
    referee.add_argument("--time-limit", type=_positive_float, default=600.0, help="seconds from login (default: 600)")
    referee.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    referee.add_argument("--port", type=_port, default=8000, help="port (default: 8000)")
    referee.add_argument("--allow-remote", action="store_true", help="allow binding beyond this host")
    referee.add_argument("--password", help="password /login requires (needed with --allow-remote)")
    referee.add_argument("--meter", help="power meter KIND:ADDRESS, started at login, stopped at logout")
    referee.add_argument("--seed", type=int, help="seed of the image order (default: a fresh one, recorded)")
    referee.add_argument(
        "--linger", type=_non_negative_float, default=10.0, help="seconds of 401s after the session (default: 10)"
    )
    referee.add_argument("--results", default="results/referee", help="folder for sessions (default: results/referee)")
    referee.set_defaults(handler=_cmd_referee)

    lpirc = commands.add_parser("lpirc-score", parents=[output], help="accuracy per energy and prizes over runs")
    lpirc.add_argument("runs", nargs="+", help="run ids or folders (eval runs with --meter, or referee sessions)")
    lpirc.add_argument(
        "--time-limit", type=_non_negative_float, help="count only results received within this many seconds"
    )
    lpirc.add_argument(
        "--allow-mixed-sources", action="store_true", help="rank runs whose energy comes from different sources"
    )
    lpirc.add_argument("--subset", help="eval runs: the subset whose accuracy counts (default: the first)")
    lpirc.add_argument("--results", default="results", help="results folder (default: results)")
    lpirc.set_defaults(handler=_cmd_lpirc_score)


def _cmd_subsets(args) -> int:
    if args.json:
        print_json([dataclasses.asdict(s) for s in SUBSETS.values()])
        return 0
    console = stdout_console()
    for subset in SUBSETS.values():
        column = subset.flag or "(every labelled image)"
        console.print(f"{subset.name:22} column={column:26} family={subset.family}")
    console.print("keyword-spotting cards: all, and one subset per class of the card (e.g. yes, no, silence)")
    return 0


def _exposure_ms(args) -> int:
    from harness.stream.compose import wav_duration_ms

    if args.audio:
        return wav_duration_ms(Path(args.audio))
    if args.duration_ms is None:
        raise UserError("declare the exposure the rates divide by: --audio W.wav or --duration-ms N")
    return args.duration_ms


def _cmd_stream_score(args) -> int:
    from harness.stream.detections import load_detections
    from harness.stream.ledger import load_ledger
    from harness.stream.report import print_score
    from harness.stream.scoring import score_stream

    duration_ms = _exposure_ms(args)
    ledger = load_ledger(Path(args.ledger), duration_ms, args.ledger_unit)
    detections = load_detections(Path(args.detections), duration_ms)
    result = score_stream(args.policy, ledger, detections, duration_ms, args.tolerance_ms, args.wakeword)
    if args.json:
        print_json(dataclasses.asdict(result))
    else:
        print_score(result, stdout_console())
    return 0


def _cmd_stream_run(args) -> int:
    from harness.stream.report import print_score, print_stream_run
    from harness.stream.run import StreamRequest, run_stream

    if not args.wav:
        raise UserError("`harness stream` needs --wav STREAM.wav (16 kHz mono 16-bit); see `harness stream build`")
    board = get_board(args.board)
    card, model = _model_for(args, board)
    request = StreamRequest(
        card=card,
        model=model,
        board=board,
        wav=Path(args.wav),
        results_root=Path(args.results),
        port=args.port,
        tflm=_tflm_tree(args),
        serial_number=args.serial,
        ledger=Path(args.ledger) if args.ledger else None,
        ledger_unit=args.ledger_unit,
        tolerance_ms=args.tolerance_ms,
        wakeword=args.wakeword,
    )
    outcome = run_stream(request)
    if args.json:
        print_json(outcome.summary)
    elif args.quiet:
        print(outcome.summary["run_dir"])
    else:
        console = stdout_console()
        print_stream_run(outcome.summary, console)
        for policy, result in outcome.scores.items():
            if isinstance(result, str):
                console.print(f"{policy}: not scored: {result}", highlight=False)
            else:
                print_score(result, console)
    return 0 if outcome.summary["device_equals_host"] else 1


def _cmd_stream(args) -> int:
    if args.action != "build":
        return _cmd_stream_run(args)
    from harness.stream.compose import build_stream, parse_placements
    from harness.stream.report import print_built

    if not args.clips or not args.out:
        raise UserError("`harness stream build` needs --clips DIR and --out STREAM.wav")
    out = Path(args.out)
    built = build_stream(
        Path(args.clips),
        out,
        Path(args.ledger) if args.ledger else out.with_suffix(".csv"),
        at=parse_placements(args.at) if args.at else None,
        count=args.count,
        words=[w.strip() for w in args.words.split(",") if w.strip()] if args.words else None,
        min_gap_ms=args.min_gap_ms,
        duration_ms=args.duration_ms,
        background=args.background,
        snr_db=args.snr_db,
        seed=args.seed,
    )
    if args.json:
        print_json(dataclasses.asdict(built))
    else:
        print_built(built, stdout_console())
    return 0


def _output_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    common.add_argument("--quiet", action="store_true", help="no progress, only what a CI log needs")
    return common


def _link_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--link-baud", type=int, help="virtual board: pace its link like a UART at this baud rate (0: unpaced)"
    )
    common.add_argument(
        "--emulate-invoke-ms", type=float, help="virtual board: each inference takes at least this long"
    )
    common.add_argument(
        "--switch-baud", type=int, help="after the handshake, switch the link to this baud rate (0: stay)"
    )
    common.add_argument(
        "--labgrid-place", metavar="NAME", help="a board in a labgrid farm: acquire the place, use its serial port"
    )
    common.add_argument(
        "--faults",
        type=_fault_spec,
        help="inject link faults through a proxy, e.g. drop=1e-3,corrupt=1e-3,dup=1e-4,reset-every=200",
    )
    return common


def _fault_spec(text: str):
    from harness.link.faults import FaultSpec

    try:
        return FaultSpec.parse(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _board_with_link_options(args):
    from harness.device.launch import with_link_options

    return with_link_options(get_board(args.board), args.link_baud, args.emulate_invoke_ms, args.switch_baud)


def build_parser() -> argparse.ArgumentParser:
    output = _output_options()
    link_options = _link_options()
    parser = _Parser(prog="harness", description="Benchmark TinyML models on microcontrollers.")
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser(
        "eval", parents=[output, link_options], help="stream a benchmark subset to a board and compare with the host"
    )
    run.add_argument("--board", default="sim", help="board id from boards/ (default: sim, the virtual board)")
    run.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    run.add_argument("--model-file", help="a .tflite to use instead of the card's own file (same preprocessing)")
    run.add_argument("--port", help="serial device or pyserial URL of a real board (default: found by USB id)")
    run.add_argument("--serial", help="with several boards of a kind attached: the USB serial number to use")
    run.add_argument(
        "--dataset",
        default=DEMO,
        help="'demo', a folder (published Wake Vision layout, or labels.csv + images/), or hf:Harvard-Edge/Wake-Vision",
    )
    run.add_argument("--subset", default="all", help="comma-separated subsets (see `harness subsets`)")
    run.add_argument("--split", help="split(s) of a published-layout dataset, e.g. test or test,validation")
    run.add_argument("--limit", type=_positive_int, help="evaluate at most this many samples")
    run.add_argument(
        "--pools", action="store_true", help="also evaluate each subset's F1 negative pool, as f1_wv needs"
    )
    run.add_argument("--strict", action="store_true", help="stop at an unreadable image instead of skipping it")
    run.add_argument(
        "--protocol",
        choices=("harness", "eembc"),
        default="harness",
        help="the board's wire protocol: harness firmware (default) or MLPerf Tiny / EEMBC DUT firmware",
    )
    run.add_argument("--results", default="results", help="folder for run folders (default: results)")
    run.add_argument(
        "--resume",
        metavar="RUN",
        help="finish an interrupted run (its id under --results, or its .partial folder) from its journal",
    )
    run.add_argument(
        "--references",
        type=_reference_names,
        default=DEFAULT_REFERENCES,
        help=f"host references, comma-separated (default: {','.join(DEFAULT_REFERENCES)})",
    )
    run.add_argument("--tflm", help="TFLM source tree for firmware builds (default: $HARNESS_TFLM_TREE)")
    run.add_argument("--meter", help="power meter KIND:ADDRESS for energy per inference (see docs/energy.md)")
    run.add_argument(
        "--shuffle", nargs="?", type=int, const=-1, metavar="SEED", help="shuffle samples in small groups (seed)"
    )
    run.set_defaults(handler=_cmd_eval)

    flash = commands.add_parser("flash", help="build the firmware for a board and load it (QEMU: boot and check)")
    flash.add_argument("--board", required=True, help="board id from boards/")
    flash.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    flash.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
    flash.add_argument(
        "--tflm", help="TFLM source tree (default: $HARNESS_TFLM_TREE); QEMU boards without it: self-test firmware"
    )
    flash.add_argument("--port", help="serial port of a real board, or 'auto' (default: found by USB id)")
    flash.add_argument("--serial", help="with several boards of a kind attached: the USB serial number to use")
    flash.add_argument("--out", default="build", help="where PlatformIO projects are generated (default: build)")
    flash.set_defaults(handler=_cmd_flash)

    generate = commands.add_parser("generate", parents=[output], help="write the PlatformIO project for a board")
    generate.add_argument("--board", required=True, help="nucleo_h743, nano33ble or esp32dev")
    generate.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
    generate.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
    generate.add_argument("--tflm", help="TFLM source tree (default: $HARNESS_TFLM_TREE, else the board's choice)")
    generate.add_argument("--out", default="build", help="where projects go: OUT/<board>/<model hash>/")
    generate.set_defaults(handler=_cmd_generate)

    link = commands.add_parser(
        "link-test",
        parents=[output, link_options],
        help="check and time the link: echo frames both ways, PERF workload",
    )
    link.add_argument("--board", default="sim", help="board id from boards/ (default: sim)")
    link.add_argument("--port", help="serial device or pyserial URL of a real board")
    link.add_argument("--bytes", type=_positive_int, default=1 << 20, help="bytes through the link, both ways")
    link.set_defaults(handler=_cmd_link_test)

    for name, handler, text in (
        ("perf", _cmd_perf, "time repeated invokes of one input: min, median, p95"),
        ("profile", _cmd_profile, "time one invoke operator by operator"),
    ):
        timed = commands.add_parser(name, parents=[output], help=text)
        timed.add_argument("--board", default="sim", help="board id from boards/ (default: sim)")
        timed.add_argument("--model", default=DEFAULT_MODEL, help="model card name or card .toml path")
        timed.add_argument("--model-file", help="a .tflite to use instead of the card's own file")
        timed.add_argument("--port", help="serial device or pyserial URL of a real board")
        timed.add_argument("--dataset", default=DEMO, help="where the input comes from (its first image)")
        timed.add_argument("--tflm", help="TFLM source tree for firmware builds (default: $HARNESS_TFLM_TREE)")
        timed.set_defaults(handler=handler)
        if name == "perf":
            timed.add_argument("--runs", type=_positive_int, default=50, help="timed invokes (default: 50)")
            timed.add_argument("--warmups", type=int, default=5, help="untimed invokes first (default: 5)")
            timed.add_argument("--mlperf", action="store_true", help="also the median of 5 windows of >= 10 s")

    runs = commands.add_parser("runs", parents=[output], help="list the runs in a results folder")
    runs.add_argument("--results", default="results", help="results folder (default: results)")
    runs.set_defaults(handler=_cmd_runs)

    report = commands.add_parser("report", parents=[output], help="write a self-contained HTML report of runs")
    report.add_argument("runs", nargs="+", help="run ids (under --results) or run folders")
    report.add_argument("--out", default="report.html", help="the HTML file to write (default: report.html)")
    report.add_argument("--results", default="results", help="results folder (default: results)")
    report.set_defaults(handler=_cmd_report)

    compare = commands.add_parser("compare", parents=[output], help="what changed between two runs, with significance")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--results", default="results", help="results folder (default: results)")
    compare.add_argument(
        "--latency-tolerance",
        type=float,
        help="smallest relative latency change called significant (default by source: emulated 0, device 0.02; "
        "sim latency is host time and is judged only with this option)",
    )
    compare.set_defaults(handler=_cmd_compare)

    check = commands.add_parser("check", parents=[output], help="gate a run: exit 1 when a gate fails")
    check.add_argument("run")
    check.add_argument("--gates", required=True, help="gates TOML file (see docs/lab-ci.md)")
    check.add_argument("--baseline", help="run to compare latency, arena and flash against")
    check.add_argument("--junit", help="write JUnit XML with one test case per gate")
    check.add_argument("--results", default="results", help="results folder (default: results)")
    check.set_defaults(handler=_cmd_check)

    conv = commands.add_parser("convert", parents=[output], help="a float Keras model to full-integer TFLite")
    conv.add_argument("--card", required=True, help="the float model's card: its preprocessing and output")
    conv.add_argument("--model", help="the .keras/.h5 file or SavedModel folder (default: the card's file)")
    conv.add_argument("--out", required=True, help="the .tflite to write")
    conv.add_argument("--dataset", default=DEMO, help="calibration and check data (default: demo)")
    conv.add_argument("--subset", default="all", help="subsets to draw samples from (default: all)")
    conv.add_argument("--samples", type=_positive_int, default=50, help="calibration samples; the rest are held out")
    conv.add_argument("--io", default="int8", help="input/output type: int8, uint8 or float32 (default: int8)")
    conv.add_argument("--reference", help="a published model's card to compare top-1 with on every sample")
    conv.set_defaults(handler=_cmd_convert)

    inspect = commands.add_parser("inspect", parents=[output], help="operators, MACs, arena and board fit of a model")
    inspect.add_argument("model", help="model card name or a .tflite file")
    inspect.add_argument("--board", help="only this board's fit (default: every board)")
    inspect.add_argument("--no-fit", action="store_true", help="skip the board fit table")
    inspect.add_argument("--layers", action="store_true", help="print every layer with its MACs")
    inspect.set_defaults(handler=_cmd_inspect)

    scorer = commands.add_parser("score", parents=[output], help="the eval metrics for predictions made elsewhere")
    scorer.add_argument("--labels", required=True, help="label CSV in the Wake Vision layout")
    scorer.add_argument("--predictions", required=True, help="CSV with filename,prediction[,score]")
    scorer.add_argument("--subset", default=",".join(SUBSETS), help="comma-separated subsets (default: all of them)")
    scorer.set_defaults(handler=_cmd_score)

    commands.add_parser("boards", parents=[output], help="list the boards").set_defaults(handler=_cmd_boards)
    commands.add_parser("datasets", parents=[output], help="list the dataset sources").set_defaults(
        handler=_cmd_datasets
    )
    dataset = commands.add_parser("dataset", help="work on datasets")
    dataset_commands = dataset.add_subparsers(dest="dataset_command", required=True, parser_class=_Parser)
    build = dataset_commands.add_parser(
        "build", parents=[output], help="Wake Vision labels for your images from Open Images-style boxes"
    )
    build.add_argument(
        "--annotations", required=True, help="folder with *bbox*.csv, *class-descriptions*.csv, *miap*.csv"
    )
    build.add_argument("--images", required=True, help="folder with the images (named by ImageID)")
    build.add_argument("--out", required=True, help="folder for labels.csv (and an images/ link): a --dataset")
    build.set_defaults(handler=_cmd_dataset_build)
    models = commands.add_parser("models", parents=[output], help="list the model cards, or pull one")
    models.add_argument("action", nargs="?", choices=("list", "pull"), default="list")
    models.add_argument("name", nargs="?", help="with pull: the card whose model to fetch and verify")
    models.set_defaults(handler=_cmd_models)
    stream_score = commands.add_parser(
        "stream-score", parents=[output], help="score keyword detections on continuous audio against an event ledger"
    )
    stream_score.add_argument("--ledger", required=True, help="CSV of label,start_ms[,end_ms]")
    stream_score.add_argument("--detections", required=True, help="CSV of label,time_ms,score,reference")
    stream_score.add_argument(
        "--policy",
        default="optimal",
        choices=("optimal", "tf-compat", "mlperf-sww"),
        help="matching rules (default: optimal)",
    )
    stream_score.add_argument(
        "--tolerance-ms", type=int, help="match window either side of an event (default: optimal 1000, tf-compat 1500)"
    )
    exposure = stream_score.add_mutually_exclusive_group()
    exposure.add_argument("--audio", help="the stream's WAV: its length is the exposure and bounds the ledger")
    exposure.add_argument("--duration-ms", type=_positive_int, help="the exposure, when the WAV is not at hand")
    stream_score.add_argument("--ledger-unit", choices=("ms", "s"), help="the ledger's time unit, when not ms")
    stream_score.add_argument("--wakeword", help="mlperf-sww: the wakeword label (default: the ledger's only label)")
    stream_score.set_defaults(handler=_cmd_stream_score)

    stream = commands.add_parser(
        "stream", parents=[output], help="continuous audio: `stream build` composes a test stream and its ledger"
    )
    stream.add_argument(
        "action", nargs="?", choices=("build",), help="build: compose a stream; without it: run a stream on a board"
    )
    stream.add_argument("--board", default="sim", help="run: board id (default: sim, the virtual board)")
    stream.add_argument("--model", default="tflm_micro_speech", help="run: a keyword card with [streaming]")
    stream.add_argument("--model-file", help="run: a .tflite to use instead of the card's own file")
    stream.add_argument("--wav", help="run: the stream, 16 kHz mono 16-bit")
    stream.add_argument("--ledger-unit", choices=("ms", "s"), help="run: the ledger's time unit when not ms")
    stream.add_argument("--tolerance-ms", type=int, help="run: matching tolerance for optimal and tf-compat")
    stream.add_argument("--wakeword", help="run: mlperf-sww's wakeword (default: the card's first keyword)")
    stream.add_argument("--results", default="results", help="run: folder for run folders (default: results)")
    stream.add_argument("--port", help="run: serial device or pyserial URL of a real board")
    stream.add_argument("--serial", help="run: the USB serial number, with several boards of a kind")
    stream.add_argument("--tflm", help="run: TFLM source tree for firmware builds (default: $HARNESS_TFLM_TREE)")
    stream.add_argument("--clips", help="build: folder of 16 kHz mono clips (label from folder or file name)")
    stream.add_argument("--out", help="build: the stream WAV to write")
    stream.add_argument("--ledger", help="build: the ledger to write (default: OUT with .csv); run: events to score")
    stream.add_argument("--at", help="build: clips at fixed times, label:start_ms,... (e.g. yes:1000,no:3500)")
    stream.add_argument("--count", type=_positive_int, help="build: this many clips at random times instead of --at")
    stream.add_argument("--words", help="build with --count: labels to draw from, comma-separated (default: all)")
    stream.add_argument("--min-gap-ms", type=int, default=1000, help="build with --count: least gap (default: 1000)")
    stream.add_argument("--duration-ms", type=_positive_int, help="build: stream length (default: last clip + 1 s)")
    stream.add_argument("--background", default="silence", help="build: 'silence' or a WAV looped underneath")
    stream.add_argument("--snr-db", type=float, help="build: each clip's power over the background's, in dB")
    stream.add_argument("--seed", type=int, default=0, help="build: random seed for times and clip choice")
    stream.set_defaults(handler=_cmd_stream)
    commands.add_parser("subsets", parents=[output], help="list the benchmark subsets").set_defaults(
        handler=_cmd_subsets
    )
    _add_energy_commands(commands, output)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console.QUIET = getattr(args, "quiet", False) or getattr(args, "json", False)
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
