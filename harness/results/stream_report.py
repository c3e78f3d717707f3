"""Stream runs and scores as tables, in the terminal and the HTML report: every rate beside its raw count
and the exposure it divides by."""

from rich.console import Console
from rich.table import Table

from harness.results.stream_scores import MlperfSwwScore, OptimalScore, TfCompatScore
from harness.results.summary import StreamSummary


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _exposure(duration_ms: int) -> str:
    return f"{duration_ms / 1000:g} s ({duration_ms / 3_600_000:.4f} h)"


def optimal_rows(r: OptimalScore) -> list[tuple[str, str, str]]:
    """The optimal policy's figures: (measure, value, what it is counted from). The terminal and the HTML
    report show the same rows."""
    exposure = _exposure(r.duration_ms)
    return [
        ("events", str(r.events), f"{r.ignored_events} _silence_/_unknown_ annotations not counted"),
        ("detections", str(r.detections), f"{r.ignored_detections} _silence_/_unknown_ detections not counted"),
        ("hits", str(r.hits), ""),
        ("misses", str(r.misses), ""),
        ("substitutions", str(r.substitutions), "right time, wrong label"),
        ("duplicates", str(r.duplicates), "further detections of a matched event"),
        ("false alarms", str(r.false_alarms), "no event within tolerance"),
        ("recall", _pct(r.recall), f"{r.hits} / {r.events} events"),
        ("precision", _pct(r.precision), f"{r.hits} / {r.detections} detections"),
        ("false alarms / hour", _rate(r.false_alarms_per_hour), f"{r.false_alarms} in {exposure}"),
        (
            "unwanted triggers / hour",
            _rate(r.unwanted_triggers_per_hour),
            f"{r.unwanted_triggers} (false alarms + duplicates + substitutions) in {exposure}",
        ),
    ]


def optimal_title(r: OptimalScore) -> str:
    return f"optimal: one-to-one matching, tolerance ±{r.tolerance_ms} ms, detections at {r.timing_reference}"


LABEL_COLUMNS = (
    "label",
    "events",
    "hits",
    "subst.",
    "misses",
    "detections",
    "wrong label",
    "dupl.",
    "false al.",
    "recall",
    "precision",
)


def label_rows(r: OptimalScore) -> list[list[str]]:
    """The per-label table's rows, in LABEL_COLUMNS order."""
    return [
        [
            row.label,
            *(
                str(x)
                for x in (
                    row.events,
                    row.hits,
                    row.substitutions,
                    row.misses,
                    row.detections,
                    row.wrong_label,
                    row.duplicates,
                    row.false_alarms,
                )
            ),
            _pct(row.recall),
            _pct(row.precision),
        ]
        for row in r.per_label
    ]


def latency_line(r: OptimalScore) -> str | None:
    lat = r.latency
    if not lat.count:
        return None
    return (
        f"latency of {lat.count} hits, detection ({lat.timing_reference}) minus {lat.measured_from}: "
        f"min {lat.min_ms:.0f}, median {lat.median_ms:.0f}, p90 {lat.p90_ms:.0f}, max {lat.max_ms:.0f}, "
        f"mean {lat.mean_ms:.1f} ms"
    )


def _print_optimal(r: OptimalScore, console: Console) -> None:
    table = Table(title=optimal_title(r))
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("from", justify="left")
    for row in optimal_rows(r):
        table.add_row(*row)
    console.print(table)
    if r.per_label:
        labels = Table(title="per label")
        for name in LABEL_COLUMNS:
            labels.add_column(name, justify="left" if name == "label" else "right")
        for row in label_rows(r):
            labels.add_row(*row)
        console.print(labels)
    latency = latency_line(r)
    if latency:
        console.print(latency, highlight=False)


def _print_tf(r: TfCompatScore, console: Console) -> None:
    console.print(
        f"tf-compat (TF speech_commands StreamingAccuracyStats, tolerance ±{r.tolerance_ms} ms):", highlight=False
    )
    console.print(r.line, highlight=False, markup=False)
    console.print(
        f"counts: {r.ground_truth} annotations, {r.matched} matched entries, {r.correct} correct, {r.wrong} wrong, "
        f"{r.false_positives} false positives ({_rate(r.false_positives_per_hour)} per hour over "
        f"{_exposure(r.duration_ms)}); {r.dropped_silence_detections} _silence_ detections dropped",
        highlight=False,
    )
    table = Table(title="TF conventions against optimal matching")
    table.add_column("convention")
    table.add_column("affected", justify="right")
    table.add_column("changed the numbers")
    table.add_column("what it does")
    for c in r.conventions:
        table.add_row(c.name, str(c.affected), "yes" if c.changed_numbers else "no", c.description)
    console.print(table)
    for caveat in r.caveats:
        console.print(f"note: {caveat}", highlight=False)


def _print_mlperf(r: MlperfSwwScore, console: Console) -> None:
    console.print(
        f"mlperf-sww: wakeword {r.wakeword!r}, a detection from a wakeword's start to {r.after_end_ms} ms after its "
        f"end is a true positive; false positives within {r.debounce_ms} ms merged",
        highlight=False,
    )
    console.print(r.line, highlight=False)
    console.print(
        f"{r.wakewords} wakewords; {r.false_detections_before_debounce} false detections before merging; "
        f"{r.ignored_detections} detections of other labels ignored; false positives per hour "
        f"{_rate(r.false_positives_per_hour)} ({r.false_positives} in {_exposure(r.duration_ms)})",
        highlight=False,
    )
    for caveat in r.caveats:
        console.print(f"note: {caveat}", highlight=False)


def _print_counts(r, console: Console) -> None:
    """A policy without a printer of its own: its counts in its own terms."""
    console.print(_counts_line(r), highlight=False)


PRINTERS = {OptimalScore: _print_optimal, TfCompatScore: _print_tf, MlperfSwwScore: _print_mlperf}


def print_score(result, console: Console) -> None:
    PRINTERS.get(type(result), _print_counts)(result, console)


def _optimal_line(r: OptimalScore) -> str:
    return (
        f"optimal (±{r.tolerance_ms} ms): recall {_pct(r.recall)} ({r.hits} / {r.events} events), precision "
        f"{_pct(r.precision)} ({r.hits} / {r.detections} detections), unwanted triggers / hour "
        f"{_rate(r.unwanted_triggers_per_hour)} ({r.unwanted_triggers} in {r.duration_ms / 1000:g} s)"
    )


def _tf_line(r: TfCompatScore) -> str:
    return f"tf-compat (±{r.tolerance_ms} ms): {r.line}"


def _mlperf_line(r: MlperfSwwScore) -> str:
    return f"mlperf-sww (wakeword {r.wakeword!r}): {r.line}"


def _counts_line(r) -> str:
    counts = r.counts()
    return f"{r.policy}: {' / '.join(str(counts[k]) for k in counts)} ({r.COUNTS_AS})"


LINES = {OptimalScore: _optimal_line, TfCompatScore: _tf_line, MlperfSwwScore: _mlperf_line}


def score_line(result) -> str:
    """A policy's score in one line: its headline figures, each with what it counts (the tables, notes and
    per-label rows are print_score's)."""
    return LINES.get(type(result), _counts_line)(result)


def print_stream_run(summary: StreamSummary, console: Console) -> None:
    """What `harness stream run` did: detections on device and host, and whether they agree."""
    device, host = summary.detections.device, summary.detections.host
    console.print(
        f"{summary.model} on {summary.board}: {_exposure(summary.audio.duration_ms)} of audio, "
        f"{summary.feature_rows:,} feature rows, {summary.model_runs:,} model runs, "
        f"{len(device)} detections (times at the {summary.timing_reference})",
        highlight=False,
    )
    if summary.model_caveat:
        console.print(f"caveat (model card): {summary.model_caveat}", highlight=False, markup=False)
    verdict = "identical to" if summary.device_equals_host else "DIFFERENT from"
    console.print(f"device detections {verdict} the host reference's ({len(host)})", highlight=False)
    for line in pipeline_lines(summary):
        console.print(line, highlight=False)


def pipeline_lines(summary: StreamSummary) -> list[str]:
    """The pipeline's compute over the stream and the frontend's arena, each with its source."""
    busy, lines = summary.busy, []
    if busy.instructions is not None:
        per_run = f"{busy.instructions / summary.model_runs:,.0f}" if summary.model_runs else "n/a"
        lines.append(
            f"pipeline instructions ({busy.source}, QEMU -icount): {busy.instructions:,} "
            f"({per_run} per model run, frontend rows included)"
        )
    if busy.seconds is not None:
        lines.append(f"pipeline time ({busy.source}): {busy.seconds:.3f} s, {busy.real_time_factor:.3f}x real time")
    arena = summary.frontend_arena_used
    if arena and arena.bytes:
        lines.append(f"frontend arena ({arena.source}): {arena.bytes:,} bytes used")
    return lines
