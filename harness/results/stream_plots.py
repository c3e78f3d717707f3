"""A stream run's figures: its detections against the ledger along the stream, and the three scoring
policies' counts side by side (harness/results/stream_scores.py holds what each policy records)."""

from harness.results.plots import DEVICE_COLOUR, HOST_COLOURS, OUTCOME_COLOURS, Omitted, pyplot
from harness.results.runs import Run
from harness.results.stream_scores import NotScorable


def detections_over_time(run: Run) -> object:
    """Rows: the ledger's events, the device's detections coloured by what the optimal policy made of them,
    and the host reference's detections."""
    summary = run.stream_summary
    optimal = summary.optimal
    fig, ax = pyplot().subplots(figsize=(10, 2.6), layout="constrained")
    rows = ["host", "device"]
    if optimal:
        rows.append("ledger")
        events = [o for o in optimal.outcomes if o.event_ms is not None]  # hits, substitutions and misses
        for o in events:
            ax.scatter(o.event_ms / 1000, 2, marker="v", s=60, color=OUTCOME_COLOURS[o.kind], zorder=3)
            ax.annotate(o.event_label, (o.event_ms / 1000, 2), xytext=(0, 7), textcoords="offset points",
                        ha="center", fontsize="small")  # fmt: skip
        kinds = {(o.detection_ms, o.detection_label): o.kind for o in optimal.outcomes if o.detection_ms is not None}
        seen = sorted({o.kind for o in optimal.outcomes})
    else:
        kinds, seen = {}, []
    for d in summary.detections.device:
        kind = kinds.get((d.time_ms, d.label), "detection")
        ax.scatter(d.time_ms / 1000, 1, marker="|", s=500, linewidths=2, color=OUTCOME_COLOURS.get(kind, DEVICE_COLOUR))
    host = summary.detections.host
    ax.scatter(
        [d.time_ms / 1000 for d in host], [0] * len(host), marker="|", s=500, linewidths=2, color=HOST_COLOURS[0]
    )
    for kind in seen:  # legend entries for the outcomes this run has, and only those
        ax.scatter([], [], marker="|", s=120, linewidths=2, color=OUTCOME_COLOURS[kind], label=kind.replace("_", " "))
    if seen:
        fig.legend(loc="outside lower center", ncols=len(seen), frameon=False, fontsize="small")
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(-0.6, len(rows) - 0.2)
    ax.set_xlim(0, summary.audio.duration_ms / 1000)
    ax.set_xlabel(f"seconds into the stream (detections at the {summary.timing_reference}; {summary.busy.source})")
    return fig


def policies(run: Run) -> object:
    scores = run.stream_summary.scores
    if scores is None:
        raise Omitted("the run had no ledger (harness stream --ledger): no policy scored it")
    scored = {p: s for p, s in scores.by_policy().items() if not isinstance(s, NotScorable)}
    counted = {p: s.counts() for p, s in scored.items()}
    if not counted:
        raise Omitted("no policy could score this ledger")
    fig, ax = pyplot().subplots(figsize=(10, 0.7 * len(counted) + 1.4), layout="constrained")
    height = 0.25
    for i, (measure, colour) in enumerate(zip(("correct", "missed", "unwanted"), ("#2ca02c", "#7f7f7f", DEVICE_COLOUR),
                                              strict=True)):  # fmt: skip
        values = [c[measure] for c in counted.values()]
        bars = ax.barh([k + i * height for k in range(len(counted))], values, height, color=colour, label=measure)
        ax.bar_label(bars, padding=2, fontsize="x-small")
    ax.set_yticks([k + height for k in range(len(counted))], [f"{p}\n({s.COUNTS_AS})" for p, s in scored.items()],
                  fontsize="small")  # fmt: skip
    ax.invert_yaxis()
    ax.set_xlim(0, max(max(c.values()) for c in counted.values()) * 1.15 + 1)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(f"count over the stream ({run.stream_summary.busy.source} detections)")
    fig.legend(loc="outside lower center", ncols=3, frameon=False, fontsize="small")
    return fig


STREAM_FIGURES = {"Detections against the ledger": detections_over_time, "The three policies": policies}
