"""The report's figures, drawn with matplotlib as inline SVG whose text stays text (svg.fonttype 'none'), so a
browser can check that every label sits inside its figure. A figure that would carry no information (one bar,
a sliver, every value n/a) is not drawn: its place holds a one-line note saying why."""

import io
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow.parquet as pq

from harness.results.runs import Run

DEVICE_COLOUR, HOST_COLOURS = "#d62728", ("#1f77b4", "#2ca02c", "#9467bd")
OUTCOME_COLOURS = {
    "hit": "#2ca02c",
    "substitution": "#ff7f0e",
    "duplicate": "#9467bd",
    "false_alarm": DEVICE_COLOUR,
    "miss": "#7f7f7f",
}
SLIVER = 0.05  # a bar shorter than this share of its axis is not drawn as a bar


@dataclass(frozen=True)
class Figure:
    """One figure of the report: its SVG markup, or the note saying why it is not drawn."""

    title: str
    svg: str | None = None
    note: str | None = None


class Omitted(Exception):
    """Raised by a figure that would carry no information; its message is the report's note."""


@cache
def pyplot():
    """matplotlib.pyplot on the Agg backend (no display), imported when the first figure is drawn: importing it
    takes a third of a second, which `harness runs` and the report's refusals do not need."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# The SVG's text is set by the browser, in its fonts, not matplotlib's: tick labels get room to differ in size (the
# y axis's lowest label and the x axis's first would otherwise sit a pixel apart).
FIGURE_STYLE = {"xtick.major.pad": 6.0, "ytick.major.pad": 5.0}


def _svg(fig) -> str:
    plt = pyplot()
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "harness"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", pad_inches=0.15, metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # inline: no XML declaration or doctype


def draw(title: str, figure: Callable[[Run], object], run: Run) -> Figure:
    """`figure(run)` gives a matplotlib figure, or (figure, a note on what it leaves out), or raises Omitted."""
    plt = pyplot()
    try:
        with plt.rc_context(FIGURE_STYLE):
            drawn = figure(run)
        fig, note = drawn if isinstance(drawn, tuple) else (drawn, None)
        return Figure(title, svg=_svg(fig), note=note)
    except Omitted as why:
        plt.close("all")
        return Figure(title, note=str(why))


def text_colour(background) -> str:
    """Black or white, whichever reads better on `background` (its WCAG relative luminance)."""
    from matplotlib.colors import to_rgb

    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(background)]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "black" if luminance > 0.179 else "white"


def _is_person_task(run: Run) -> bool:
    return run.eval_summary.facts.wake_vision


def _mark_quantiles(ax, values: np.ndarray, unit: str, colour: str, quantiles=(50, 95)) -> None:
    for q, style in zip(quantiles, ("--", ":"), strict=True):
        value = np.percentile(values, q)
        name = "median" if q == 50 else f"p{q}"
        ax.axvline(value, color=colour, linestyle=style, linewidth=1, label=f"{name} {value:,.3g} {unit}")


def ecdf(ax, values: np.ndarray, colour: str, label: str) -> None:
    ordered = np.sort(values)
    ax.step(ordered, np.arange(1, len(ordered) + 1) / len(ordered), where="post", color=colour, label=label)
    ax.set_ylim(0, 1.02)
    # No label at 0: it would sit a pixel above the first x tick label, and touch it in a browser's fonts.
    ax.set_yticks([0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel("share of samples")


METRIC_NAMES = {"accuracy": "accuracy", "f1_wv": "F1 (Wake Vision, rate-based)"}


def subset_scores(run: Run) -> object:
    """Accuracy, and for Wake Vision runs f1_wv, per subset: a metric or source with no value anywhere is left
    out (the note under the table says so), never drawn as n/a marks."""
    summary = run.eval_summary
    subsets = list(summary.subsets)
    sources = [("device", DEVICE_COLOUR), *zip(summary.references.used, HOST_COLOURS, strict=False)]

    def values(name: str, metric: str) -> list:
        scores = [summary.subsets[s].device if name == "device" else summary.subsets[s].host[name] for s in subsets]
        return [getattr(score, metric) for score in scores]

    wanted = ("accuracy", "f1_wv") if _is_person_task(run) else ("accuracy",)
    metrics = [m for m in wanted if any(v is not None for name, _ in sources for v in values(name, m))]
    empty = [m for m in wanted if m not in metrics]
    note = (
        f"{' and '.join(METRIC_NAMES[m] for m in empty)}: n/a on every subset and source, not drawn" if empty else None
    )
    if not metrics:
        raise Omitted("no subset has an accuracy: nothing to draw")
    fig, axes = pyplot().subplots(
        1, len(metrics), figsize=(5 * len(metrics) + 1.5, 0.5 * len(subsets) * len(sources) + 1.4), sharey=True
    )
    axes = np.atleast_1d(axes)
    y = np.arange(len(subsets))
    height = 0.8 / len(sources)
    for ax, metric in zip(axes, metrics, strict=True):
        for i, (name, colour) in enumerate(sources):
            found = values(name, metric)
            drawn = [k for k, v in enumerate(found) if v is not None]
            ax.barh(y[drawn] + i * height, [found[k] * 100 for k in drawn], height, label=name, color=colour)
        ax.set_xlim(0, 100)
        ax.set_xlabel(f"{METRIC_NAMES[metric]} %")
    unscored = {k for k in range(len(subsets)) if all(values(n, m)[k] is None for n, _ in sources for m in metrics)}
    names = [f"{name}: n/a" if k in unscored else name for k, name in enumerate(subsets)]  # not a 0 % bar
    axes[0].set_yticks(y + height * (len(sources) - 1) / 2, names)
    axes[0].invert_yaxis()
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=len(sources), frameon=False)
    fig.set_layout_engine("constrained")
    return fig, note


def _labels(run: Run) -> np.ndarray:
    labels = np.array(run.samples["label"])
    return np.where(labels == -1, 1, labels)  # far-only rows count as persons


def _matrices(run: Run, names: list[str]) -> tuple[list[str], dict[str, np.ndarray]]:
    """Class names and, per source, the confusion matrix (rows true, columns predicted)."""
    stored = run.eval_summary.confusion
    if not _is_person_task(run) and stored:  # multi-class: the matrices the run stored, with its labels
        return list(stored.labels), {name: np.array(stored.matrices[name]) for name in names if name in stored.matrices}
    labels = _labels(run)
    matrices = {}
    for name in names:
        predictions = np.array(run.samples[f"{name}_prediction"])
        matrices[name] = np.array([[np.sum((labels == t) & (predictions == p)) for p in (0, 1)] for t in (0, 1)])
    return ["non-person", "person"], matrices


def confusion(run: Run) -> object:
    classes, matrices = _matrices(run, ["device", *run.eval_summary.references.used[:1]])
    side = max(3.2, 0.55 * len(classes) + 2.0)
    fig, axes = pyplot().subplots(1, len(matrices), figsize=(side * len(matrices) + 0.8, side), layout="constrained")
    axes = np.atleast_1d(axes)
    ticks = range(len(classes))
    many = len(classes) > 2
    for k, (ax, (name, matrix)) in enumerate(zip(axes, matrices.items(), strict=True)):
        image = ax.imshow(matrix, cmap="Blues", vmin=0)
        for (t, p), count in np.ndenumerate(matrix):
            colour = text_colour(image.cmap(image.norm(count)))
            ax.text(p, t, str(count), ha="center", va="center", color=colour, fontsize="small" if many else "medium")
        ax.set_xticks(ticks, classes, rotation=45 if many else 0, ha="right" if many else "center")
        ax.set_yticks(ticks, classes if k == 0 else [])  # one label column: the next matrix's would collide
        ax.set_xlabel("predicted")
        ax.set_title(f"{name} ({run.eval_summary.latency.source if name == 'device' else 'host'})")
    axes[0].set_ylabel("label")
    return fig


def latency_values(run: Run) -> tuple[np.ndarray, str, str]:
    """The device's latency per sample: in ms when timed, in instructions when counted (QEMU -icount)."""
    instructions = [v for v in run.samples.get("instructions") or [] if v is not None]
    if instructions:
        return np.array(instructions, dtype=float), "instructions", "instructions per inference"
    micros = [v for v in run.samples["microseconds"] if v is not None]
    return np.array(micros, dtype=float) / 1000, "ms", "ms per inference"


def latency(run: Run) -> object:
    """An ECDF of the device's latency, its median and p95 marked."""
    source = run.eval_summary.latency.source
    values, unit, axis = latency_values(run)
    if not len(values):
        raise Omitted(f"no sample has a latency ({source}): nothing to draw")
    fig, ax = pyplot().subplots(figsize=(7, 3.2))
    ecdf(ax, values, DEVICE_COLOUR, f"device ({source}), {len(values)} samples")
    _mark_quantiles(ax, values, unit, "#333333")
    ax.set_xlabel(f"{axis} ({source})")
    ax.legend(fontsize="small", loc="lower right")
    return fig


def output_differences(run: Run) -> object:
    reference = run.primary_reference
    if not reference:
        raise Omitted("no host reference ran: no output difference to draw")
    diffs = np.array(run.samples[f"{reference}_max_diff_steps"])
    unit = run.eval_summary.output_diff_unit
    if len(np.unique(diffs)) < 2:
        raise Omitted(f"every sample's largest device - {reference} difference is {diffs[0]:g} {unit}: one bar")
    fig, ax = pyplot().subplots(figsize=(7, 3))
    ax.hist(diffs, bins=np.arange(0, diffs.max() + 2) - 0.5, color=HOST_COLOURS[0])
    ax.set_xlabel(f"largest device - {reference} output difference ({unit})")
    ax.set_ylabel("samples")
    return fig


def flips_against_margin(run: Run) -> object:
    reference = run.primary_reference
    if not reference:
        raise Omitted("no host reference ran: no prediction to flip")
    margin = np.abs(np.array(run.samples[f"{reference}_score"]) - 0.5)
    flipped = np.array(run.samples["device_prediction"]) != np.array(run.samples[f"{reference}_prediction"])
    if not flipped.any():
        raise Omitted(f"the device predicts as {reference} on all {len(flipped)} samples: no flip to place")
    fig, ax = pyplot().subplots(figsize=(7, 3))
    jitter = np.random.default_rng(0).uniform(-0.15, 0.15, len(margin))
    ax.scatter(margin[~flipped], jitter[~flipped], s=10, color=HOST_COLOURS[0], label="same prediction")
    ax.scatter(margin[flipped], 1 + jitter[flipped], s=18, color=DEVICE_COLOUR, label="flipped")
    ax.set_yticks([0, 1], ["same", "flipped"])
    ax.set_ylim(-0.5, 1.5)
    ax.legend(fontsize="small", loc="center right")
    ax.set_xlabel(f"{reference} confidence margin |score - 0.5| (host)")
    ax.set_title(f"device prediction flips: {int(flipped.sum())} of {len(flipped)}")
    return fig


def memory_rows(run: Run) -> list[tuple[str, int | None, int]]:
    """(what, bytes used, bytes available) for the arena and the flash."""
    arena, manifest = run.eval_summary.arena, run.record.manifest
    firmware = manifest.device.firmware
    flash_used = (firmware.flash_bytes if firmware else None) or manifest.model.bytes or 0
    return [
        (f"arena used / configured ({arena.source})", arena.used, arena.configured or 0),
        (
            "flash used / board" if firmware else "model / board flash",
            flash_used,
            run.record.manifest.board.flash_bytes or 0,
        ),
    ]


def memory(run: Run) -> object:
    """Each row as a share of what the board has; a row too small a share to see is left to the note."""
    rows = memory_rows(run)
    shown = [(what, used, total) for what, used, total in rows if used and total and used / total >= SLIVER]
    hidden = [
        f"{what}: {used / 1024:,.1f} KiB of {total / 1024:,.0f} KiB ({100 * used / total:.2g} %)"
        if used and total
        else f"{what}: not reported"
        for what, used, total in rows
        if (what, used, total) not in shown
    ]
    if not shown:
        raise Omitted("too small a share to draw as bars: " + "; ".join(hidden))
    fig, ax = pyplot().subplots(figsize=(7, 0.6 * len(shown) + 1.0))
    for i, (_, used, total) in enumerate(shown):
        ax.barh(i, 100, color="#dddddd")
        ax.barh(i, 100 * used / total, color=DEVICE_COLOUR)
        ax.text(101, i, f"{used / 1024:,.0f} of {total / 1024:,.0f} KiB", va="center", fontsize="small")
    ax.set_yticks(range(len(shown)), [row[0] for row in shown])
    ax.set_xlim(0, 135)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_xlabel("% of what the board has")
    return fig, ("a sliver, not drawn: " + "; ".join(hidden)) if hidden else None


def energy(run: Run) -> object:
    """Energy per inference (an ECDF with its median and p95) and the power trace, both from the meter."""
    summary = run.eval_summary.energy
    if summary is None or not (run.path / "energy.parquet").is_file():
        raise Omitted("the run had no power meter (harness eval --meter)")
    per_window = np.array(pq.read_table(run.path / "energy.parquet", columns=["window_uj"]).column(0).to_pylist())
    if not len(per_window):
        raise Omitted(f"the meter ({summary.source}) measured no inference window")
    power, note = run.path / "power.parquet", None
    trace = pq.read_table(power, columns=["t", "watts"]).to_pydict() if power.is_file() else {"t": [], "watts": []}
    watts = np.array(trace["watts"]) * 1000
    varies = len(watts) and np.ptp(watts) > 0.01 * np.abs(watts).mean()
    if not varies:
        flat = f"flat at {watts.mean():,.1f} mW" if len(watts) else "not recorded"
        note = f"the power trace ({summary.source}) is {flat}: not drawn"
    fig, axes = pyplot().subplots(1, 2 if varies else 1, figsize=(11 if varies else 6, 3.2), layout="constrained")
    left = np.atleast_1d(axes)[0]
    ecdf(left, per_window, DEVICE_COLOUR, f"{len(per_window)} windows ({summary.windows})")
    _mark_quantiles(left, per_window, "µJ", "#333333")
    left.set_xlabel(f"µJ per inference ({summary.source})")
    left.legend(fontsize="small", loc="lower right")
    if varies:
        right = axes[1]
        right.plot(trace["t"], watts, color=HOST_COLOURS[0], linewidth=0.8)
        if summary.idle_watts is not None:
            right.axhline(summary.idle_watts * 1000, color="#333333", linestyle="--", linewidth=1, label="idle")
            right.legend(fontsize="small", loc="lower right")
        right.set_xlabel(f"seconds from streaming start ({summary.source})")
        right.set_ylabel("mW")
    return fig, note


FIGURES = {
    "Accuracy and F1 per subset": subset_scores,
    "Confusion matrices": confusion,
    "Latency (ECDF)": latency,
    "Device - host output differences": output_differences,
    "Prediction flips against the host's confidence": flips_against_margin,
    "Arena and flash": memory,
    "Energy": energy,
}
# Runs of anomaly scores give no window a class: no accuracies, confusion or prediction flips to draw.
ANOMALY_FIGURES = {
    "Latency (ECDF)": latency,
    "Device - host output differences": output_differences,
    "Arena and flash": memory,
    "Energy": energy,
}
