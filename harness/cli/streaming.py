"""Keyword streaming commands: stream build, run and score."""

import dataclasses
from pathlib import Path

from rich.table import Table

from harness.cli import exits
from harness.console import print_json, stdout_console
from harness.errors import UserError


def exposure_ms(args) -> int:
    from harness.streaming.compose import wav_duration_ms

    if args.audio:
        return wav_duration_ms(Path(args.audio))
    if args.duration_ms is None:
        raise UserError("declare the exposure the rates divide by: --audio W.wav or --duration-ms N")
    return args.duration_ms


def cmd_stream_score(args) -> int:
    from harness.results.stream_report import print_score
    from harness.streaming.detections import load_detections
    from harness.streaming.ledger import load_ledger
    from harness.streaming.scoring import score_stream

    duration_ms = exposure_ms(args)
    ledger = load_ledger(Path(args.ledger), duration_ms, args.ledger_unit)
    detections = load_detections(Path(args.detections), duration_ms)
    result = score_stream(args.policy, ledger, detections, duration_ms, args.tolerance_ms, args.wakeword)
    if args.json:
        print_json(dataclasses.asdict(result))
    else:
        print_score(result, stdout_console())
    return 0


def cmd_stream_run(args) -> int:
    from harness.api.streaming import stream
    from harness.results.schema import to_json
    from harness.results.stream_report import print_stream_run

    run = stream(
        args.wav,
        board=args.board,
        model=args.model,
        model_file=args.model_file,
        ledger=args.ledger,
        ledger_unit=args.ledger_unit,
        tolerance_ms=args.tolerance_ms,
        wakeword=args.wakeword,
        results=args.results,
        port=args.port,
        serial=args.serial,
        protocol=args.protocol,
        tflm=args.tflm,
        progress=not (args.quiet or args.json),
    )
    if args.json:
        print_json(to_json(run.summary) | {"run_dir": str(run.path)})
    elif args.quiet:
        print(run.path)
    else:
        console = stdout_console()
        print_stream_run(run.summary, console)
        console.print(f"results: {run.path}", highlight=False)
        print_scores(run.scores, console, args.verbose)
    return exits.OK if run.device_equals_host else exits.FAILED


def print_scores(scores: dict, console, verbose: bool) -> None:
    """Each policy's score: one line, or with --verbose its tables, per-label rows and notes."""
    from harness.results.stream_report import print_score, score_line
    from harness.results.stream_scores import NotScorable

    for policy, result in scores.items():
        if isinstance(result, NotScorable):
            console.print(f"{policy}: not scored: {result.not_scorable}", highlight=False)
        elif verbose:
            print_score(result, console)
        else:
            console.print(score_line(result), highlight=False, markup=False)
    if not verbose and any(not isinstance(result, NotScorable) for result in scores.values()):
        console.print("each policy's tables, per-label rows and notes: --verbose", highlight=False)


def cmd_stream_build(args) -> int:
    from harness.streaming.compose import build_stream, parse_placements

    out = Path(args.out)
    ledger = Path(args.ledger) if args.ledger else out.with_suffix(".csv")
    for path, flag in ((out, "--out STREAM.wav"), (ledger, "--ledger LEDGER.csv")):
        if path.is_dir():
            raise UserError(f"{path} is a folder; pass a file to write as {flag}")
    built = build_stream(
        Path(args.clips),
        out,
        ledger,
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


def print_built(built, console) -> None:
    table = Table(title=f"{built.wav}: {built.duration_ms} ms over {built.background}; ledger {built.ledger}")
    for name in ("label", "start ms", "end ms", "SNR dB", "clip"):
        table.add_column(name, justify="right" if "ms" in name or "dB" in name else "left")
    for p in built.placements:
        table.add_row(p.label, str(p.start_ms), str(p.end_ms), "-" if p.snr_db is None else f"{p.snr_db:.1f}", p.clip)
    console.print(table)
    if built.headroom_gain_db:
        console.print(
            f"the whole stream was scaled by {built.headroom_gain_db:.2f} dB to avoid clipping", highlight=False
        )
