"""Energy and LPIRC commands: meter, and lpirc referee, score and map (their parsers, and their handlers, which import
what they run when they run: the parser is built from this module for every command)."""

import sys
from pathlib import Path

from harness.cli.args import RESULTS, command, group, iou_threshold
from harness.console import print_json, stdout_console
from harness.errors import LinkError, UserError
from harness.values import (
    image_count,
    iou_rule,
    linger_seconds,
    meter_seconds,
    output_folder,
    port_number,
    results_seconds,
    seed_number,
    session_seconds,
)


def cmd_meter(args) -> int:
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


def cmd_referee(args) -> int:
    import threading
    import time
    from datetime import UTC, datetime

    from harness.energy.meter import open_live_meter
    from harness.eval.order import new_seed
    from harness.lpirc.referee import Referee, check_bind, load_referee_set, save_session
    from harness.results.store import results_root

    check_bind(args.host, args.allow_remote, args.password)
    root = results_root(args.results)  # before the referee serves: '' would be the working folder
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
            summary = save_session(referee, root, started)
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
            score = score_text(summary["score"]["value"])
            line += f"; {summary['energy']['wh']:.6g} Wh ({summary['energy']['source']}), score {score}"
        stdout_console().print(line, highlight=False)
        stdout_console().print(summary["run_dir"], highlight=False)
    return 0


def score_text(score: float | None) -> str:
    return f"{score:.6g}" if score is not None else "- (no energy)"


def cmd_lpirc_score(args) -> int:
    from harness.lpirc.scores import lpirc_scores
    from harness.results.store import results_text

    results = results_text(args.results)
    roots = [results, results / "referee"]
    report = lpirc_scores(args.runs, roots, args.subset, args.time_limit, args.allow_mixed_sources)
    if args.json:
        print_json(report)
        return 0
    console = stdout_console()
    for run in report["runs"]:
        console.print(
            f"{run['run_id']}: {run['metric']} {run['accuracy']:.4f}, {run['wh']:.6g} Wh "
            f"({run['energy_source']}), score {score_text(run['score'])} per Wh",
            highlight=False,
        )
    for prize, value in report["prizes"].items():
        if isinstance(value, list):
            value = ", ".join(value) or "none"
        elif value is not None:
            value = f"{value:.6g}"
        console.print(f"{prize}: {value}", highlight=False)
    return 0


def cmd_map(args) -> int:
    from harness.eval.detection import mean_average_precision, read_boxes
    from harness.reading import MAP_TRUTH

    thresholds = args.iou if args.iou == "ilsvrc" else iou_threshold(args.iou)
    truth = read_boxes(Path(args.truth), MAP_TRUTH)
    if not truth:
        raise UserError(f"{args.truth} holds no ground-truth boxes; pass the golden file (7 numbers a box)")
    detections = read_boxes(Path(args.detections))
    for name, boxes in ((args.truth, truth), (args.detections, detections)):
        if inverted := sum(box.inverted for box in boxes):
            print(
                f"harness: note: {name}: {inverted} box(es) with xmin > xmax or ymin > ymax; scored as LPIRC's "
                "reference scores them, not refused (its own golden file holds 1692 such boxes)",
                file=sys.stderr,
            )
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


def add_meter_command(commands) -> None:
    meter = command(
        commands,
        "meter",
        cmd_meter,
        "read a power meter (or replay a log) and sum energy",
        ("harness meter wt310:TCPIP0::192.168.1.20::5025::SOCKET --seconds 10", "harness meter csv:power.csv"),
    )
    meter.add_argument("meter", help="KIND:ADDRESS, e.g. wt310:TCPIP0::127.0.0.1::5025::SOCKET or csv:log.csv")
    meter.add_argument("--seconds", type=meter_seconds, default=5.0, help="how long to record a live meter")


def add_lpirc_commands(commands) -> None:
    lpirc = group(
        commands,
        "lpirc",
        "LPIRC-style contests: serve images, score accuracy per energy, detection mAP",
        "harness lpirc map --truth golden_output.csv --detections results.csv",
    )
    referee = command(
        lpirc,
        "referee",
        cmd_referee,
        "serve images to a networked device, LPIRC style",
        "harness lpirc referee --dataset lpirc/ --time-limit 600 --meter wt310:TCPIP0::192.168.1.20::5025::SOCKET",
    )
    referee.add_argument("--dataset", required=True, help="LPIRC folder (images/<n>.jpg, ground truth) or a dataset")
    referee.add_argument("--subset", help="with a harness dataset: the subset to serve (default: all)")
    referee.add_argument("--limit", type=image_count, help="serve at most this many images")
    referee.add_argument("--time-limit", type=session_seconds, default=600.0, help="seconds from login")
    referee.add_argument("--host", default="127.0.0.1", help="address to bind")
    referee.add_argument("--port", type=port_number, default=8000, help="port")
    referee.add_argument("--allow-remote", action="store_true", help="allow binding beyond this host")
    referee.add_argument("--password", help="password /login requires (needed with --allow-remote)")
    referee.add_argument("--meter", help="power meter KIND:ADDRESS, started at login, stopped at logout")
    referee.add_argument("--seed", type=seed_number, help="seed of the image order (default: a fresh one, recorded)")
    referee.add_argument("--linger", type=linger_seconds, default=10.0, help="seconds of 401s after the session")
    referee.add_argument(
        "--results", type=output_folder("--results"), default="results/referee", help="folder for sessions"
    )

    scores = command(
        lpirc,
        "score",
        cmd_lpirc_score,
        "accuracy per energy and prizes over runs",
        "harness lpirc score RUN_A RUN_B --time-limit 600",
    )
    scores.add_argument("runs", nargs="+", help="run ids or folders (eval runs with --meter, or referee sessions)")
    scores.add_argument(
        "--time-limit", type=results_seconds, help="count only results received within this many seconds"
    )
    scores.add_argument(
        "--allow-mixed-sources", action="store_true", help="rank runs whose energy comes from different sources"
    )
    scores.add_argument("--subset", help="eval runs: the subset whose accuracy counts (default: the first)")
    RESULTS.add(scores)

    detection = command(
        lpirc,
        "map",
        cmd_map,
        "detection mAP of boxes against ground truth",
        "harness lpirc map --truth golden_output.csv --detections results.csv --iou 0.5",
    )
    detection.add_argument("--truth", required=True, help="ground truth, 7 columns (LPIRC golden_output layout)")
    detection.add_argument("--detections", required=True, help="detections, 7 columns (LPIRC results layout)")
    detection.add_argument(
        "--iou", type=iou_rule, default="ilsvrc", help="'ilsvrc' (per-box thresholds, default) or e.g. 0.5"
    )
    detection.add_argument("--continuous", action="store_true", help="widths xmax - xmin (default: inclusive +1)")
    detection.add_argument("--answered-only", action="store_true", help="only the images the detections cover")
