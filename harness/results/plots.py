"""The report's figures, drawn with matplotlib and returned as self-contained SVG data URIs."""

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from harness.results.runs import Run

DEVICE_COLOUR, HOST_COLOURS = "#d62728", ("#1f77b4", "#2ca02c", "#9467bd")


def _data_uri(fig) -> str:
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):  # text stays text: searchable, and checked by the tests
        fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue().encode()).decode()


def _is_person_task(run: Run) -> bool:
    return run.eval_summary.task == "image_classification"


def subset_scores(run: Run) -> str:
    """Accuracy, and for Wake Vision runs f1_wv, per subset; a value that is None is written n/a, not drawn."""
    summary = run.eval_summary
    subsets = list(summary.subsets)
    sources = [("device", DEVICE_COLOUR), *zip(summary.references.used, HOST_COLOURS, strict=False)]
    metrics = ("accuracy", "f1_wv") if _is_person_task(run) else ("accuracy",)
    width = 11 if len(metrics) == 2 else 6
    fig, axes = plt.subplots(1, len(metrics), figsize=(width, 0.45 * len(subsets) + 1.6), sharey=True, squeeze=False)
    axes = axes[0]
    y = np.arange(len(subsets))
    height = 0.8 / len(sources)
    for ax, metric in zip(axes, metrics, strict=True):
        for i, (name, colour) in enumerate(sources):
            scores = [summary.subsets[s].device if name == "device" else summary.subsets[s].host[name] for s in subsets]
            values = [getattr(score, metric) for score in scores]
            drawn = [k for k, v in enumerate(values) if v is not None]
            ax.barh(y[drawn] + i * height, np.array([values[k] for k in drawn]) * 100, height, label=name, color=colour)
            for k, value in enumerate(values):
                if value is None:
                    ax.text(1, y[k] + i * height, "n/a", va="center", fontsize="x-small", color=colour)
        ax.set_xlim(0, 100)
        ax.set_xlabel(f"{'accuracy' if metric == 'accuracy' else 'F1 (Wake Vision, rate-based)'} %")
    axes[0].set_yticks(y + height * (len(sources) - 1) / 2, subsets)
    axes[0].invert_yaxis()
    axes[-1].legend(loc="lower right", fontsize="small")
    return _data_uri(fig)


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


def confusion(run: Run) -> str:
    classes, matrices = _matrices(run, ["device", *run.eval_summary.references.used[:1]])
    side = max(3.0, 0.6 * len(classes) + 1.5)
    fig, axes = plt.subplots(1, len(matrices), figsize=((side + 0.2) * len(matrices), side))
    ticks = range(len(classes))
    for ax, (name, matrix) in zip(np.atleast_1d(axes), matrices.items(), strict=True):
        ax.imshow(matrix, cmap="Blues")
        for (t, p), count in np.ndenumerate(matrix):
            ax.text(p, t, str(count), ha="center", va="center", color="black")
        many = len(classes) > 2
        ax.set_xticks(ticks, classes, rotation=45 if many else 0, ha="right" if many else "center")
        ax.set_yticks(ticks, classes)
        ax.set_xlabel("predicted")
        ax.set_ylabel("label")
        ax.set_title(name)
    return _data_uri(fig)


def latency(run: Run) -> str:
    source = run.eval_summary.latency.source
    values, unit = run.samples.get("instructions"), "instructions per inference"
    if not values or values[0] is None:
        values, unit = run.samples["microseconds"], "µs per inference"
    values = [v for v in values if v is not None]
    fig, ax = plt.subplots(figsize=(6, 3))
    if values:
        ax.hist(values, bins=min(30, max(5, len(values) // 3)), color=DEVICE_COLOUR)
    ax.set_xlabel(f"{unit} ({source})")
    ax.set_ylabel("samples")
    ax.set_title(f"latency — source: {source}")
    return _data_uri(fig)


def output_differences(run: Run) -> str:
    reference = run.primary_reference
    fig, ax = plt.subplots(figsize=(6, 3))
    if reference:
        diffs = np.array(run.samples[f"{reference}_max_diff_steps"])
        ax.hist(diffs, bins=np.arange(0, max(2.0, diffs.max() + 2)) - 0.5, color=HOST_COLOURS[0])
    ax.set_xlabel(f"largest device - {reference} output difference ({run.eval_summary.output_diff_unit})")
    ax.set_ylabel("samples")
    return _data_uri(fig)


def flips_against_margin(run: Run) -> str:
    reference = run.primary_reference
    fig, ax = plt.subplots(figsize=(6, 3))
    if reference:
        margin = np.abs(np.array(run.samples[f"{reference}_score"]) - 0.5)
        flipped = np.array(run.samples["device_prediction"]) != np.array(run.samples[f"{reference}_prediction"])
        jitter = np.random.default_rng(0).uniform(-0.15, 0.15, len(margin))
        ax.scatter(margin[~flipped], jitter[~flipped], s=10, color=HOST_COLOURS[0], label="same prediction")
        ax.scatter(margin[flipped], 1 + jitter[flipped], s=18, color=DEVICE_COLOUR, label="flipped")
        ax.set_yticks([0, 1], ["same", "flipped"])
        ax.legend(fontsize="small", loc="center right")
    ax.set_xlabel(f"{reference} confidence margin |score - 0.5|")
    ax.set_title(f"device prediction flips: {int(np.sum(flipped)) if reference else 0}")
    return _data_uri(fig)


def memory(run: Run) -> str:
    arena, manifest = run.eval_summary.arena, run.record.manifest
    firmware = manifest.device.firmware
    flash_used = (firmware.flash_bytes if firmware else None) or manifest.model.bytes or 0
    rows = [
        (f"arena used / configured ({arena.source})", arena.used, arena.configured or 0),
        ("flash used / board" if firmware else "model / board flash", flash_used, manifest.board.flash_bytes or 0),
    ]
    fig, ax = plt.subplots(figsize=(6, 2.2))
    for i, (_, used, total) in enumerate(rows):
        ax.barh(i, total / 1024, color="#dddddd")
        if used is None:
            ax.text(0, i, " not reported by the DUT", va="center")
            continue
        ax.barh(i, used / 1024, color=DEVICE_COLOUR)
        ax.text(used / 1024, i, f" {used / 1024:,.0f} KiB", va="center")
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.set_xlabel("KiB")
    return _data_uri(fig)


FIGURES = {
    "Accuracy and F1 per subset": subset_scores,
    "Confusion matrices": confusion,
    "Latency distribution": latency,
    "Device - host output differences": output_differences,
    "Prediction flips against the host's confidence": flips_against_margin,
    "Arena and flash": memory,
}
# Runs of anomaly scores give no window a class: no accuracies, confusion or prediction flips to draw.
ANOMALY_FIGURES = {
    "Latency distribution": latency,
    "Device - host output differences": output_differences,
    "Arena and flash": memory,
}


def detections_over_time(run: Run) -> str:
    """A stream run's detections on device and host along the stream, one row per label."""
    summary = run.stream_summary
    found = {"device": summary.detections.device, "host": summary.detections.host}
    labels = sorted({d.label for detections in found.values() for d in detections})
    fig, ax = plt.subplots(figsize=(9, 0.4 * max(len(labels), 1) + 1.4))
    for offset, (name, colour) in zip(
        (-0.12, 0.12), (("device", DEVICE_COLOUR), ("host", HOST_COLOURS[0])), strict=True
    ):
        detections = found[name]
        rows = [labels.index(d.label) + offset for d in detections]
        times = [d.time_ms / 1000 for d in detections]
        ax.scatter(times, rows, s=400, color=colour, label=name, marker="|", linewidths=2)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlim(0, summary.audio.duration_ms / 1000)
    ax.set_xlabel(f"seconds into the stream (detections at the {summary.timing_reference})")
    ax.legend(fontsize="small", loc="upper right")
    return _data_uri(fig)


STREAM_FIGURES = {"Detections along the stream": detections_over_time}
