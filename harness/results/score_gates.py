"""The score gates of `harness runs check`: an eval run's accuracy and F1 per subset against floors, its
agreement with the primary host reference, accuracy and F1 under the host's, and accuracy under a baseline's;
an anomaly run's AUC over files against a floor, under the host's and under a baseline's."""

from harness.results.gate_figures import device_source, empty_subsets, per_subset
from harness.results.runs import Run
from harness.results.summary import EvalSummary, Score
from harness.results.verdicts import Verdict, judged, not_judged

ONE_CLASS = "no AUC (the files evaluated hold one class only)"


def gated_f1(score: Score) -> tuple[float | None, str]:
    """The F1 an F1 gate judges: the Wake Vision rate-based f1_wv where the subset has it, else f1_counts."""
    return (score.f1_wv, "f1_wv") if score.f1_wv is not None else (score.f1_counts, "f1_counts")


def f1_missing(score: Score) -> str:
    if score.f1_unavailable:
        return f"F1 n/a: {score.f1_unavailable}"
    if score.pool_incomplete:  # a run of an earlier version, which gave no reason
        return f"F1 n/a: negative pool {score.pool_incomplete} evaluated; evaluate with --pools"
    return "F1 n/a: no whole negative pool evaluated"


def accuracy(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    """The device's accuracy per subset against floors."""
    summary = run.eval_summary
    values = {subset: e.device.accuracy for subset, e in summary.subsets.items()}
    source = f"device accuracy ({device_source(run)})"
    return per_subset(settings, "min", values, empty_subsets(summary), source)


def f1(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    """The device's F1 per subset against floors, naming which F1 (gated_f1) beside each figure."""
    summary = run.eval_summary
    skipped = empty_subsets(summary)
    picked = {subset: gated_f1(e.device) for subset, e in summary.subsets.items()}
    skipped |= {
        s: f1_missing(e.device) for s, e in summary.subsets.items() if picked[s][0] is None and s not in skipped
    }
    values = {subset: value for subset, (value, _) in picked.items()}
    which = {subset: which for subset, (_, which) in picked.items()}
    return per_subset(settings, "min", values, skipped, f"device F1 ({device_source(run)})", which)


def agreement(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    """The share of samples the device and the primary host reference gave the same class, per subset."""
    summary, reference = run.eval_summary, run.eval_summary.primary_reference
    values = {subset: e.versus[reference].agreement for subset, e in summary.subsets.items()}
    source = f"agreement of the device ({device_source(run)}) with host reference {reference} (host)"
    return per_subset(settings, "min", values, empty_subsets(summary), source)


def _drops(summary: EvalSummary, reference: str, metric: str) -> dict[str, float | None]:
    """Per subset, host minus device `metric` (None where either has none)."""
    drops = {}
    for subset, entry in summary.subsets.items():
        host, device = getattr(entry.host[reference], metric), getattr(entry.device, metric)
        drops[subset] = None if host is None or device is None else host - device
    return drops


def _host_drop(run: Run, metric: str, shown: str) -> tuple[dict, dict[str, str], str]:
    """The primary host reference's `metric` minus the device's per subset, the subsets skipped and the source."""
    summary, reference = run.eval_summary, run.eval_summary.primary_reference
    source = f"{shown} of host reference {reference} (host) minus device ({device_source(run)})"
    return _drops(summary, reference, metric), empty_subsets(summary), source


def accuracy_drop(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    values, skipped, source = _host_drop(run, "accuracy", "accuracy")
    return per_subset(settings, "max", values, skipped, source)


def f1_drop(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    """F1wv alone: the host's and the device's over the same whole negative pools."""
    values, skipped, source = _host_drop(run, "f1_wv", "F1wv")
    subsets = run.eval_summary.subsets
    skipped |= {
        s: f"no f1_wv: {subsets[s].device.f1_unavailable or 'needs --pools'}"
        for s, v in values.items()
        if v is None and s not in skipped
    }
    return per_subset(settings, "max", values, skipped, source)


def _content(run: Run) -> dict[str, str]:
    dataset = run.record.manifest.dataset
    return dataset.subset_content_sha256 if dataset else {}


def _baseline_accuracy_drops(run: Run, baseline: Run) -> tuple[dict[str, float | None], dict[str, str]]:
    """Subsets present in both runs over the same data (equal subset_content_sha256)."""
    now, before = run.eval_summary, baseline.eval_summary
    content = _content(run)
    baseline_content = _content(baseline)
    values, skipped = {}, {}
    for subset, entry in now.subsets.items():
        previous = before.subsets.get(subset)
        if previous is None:
            skipped[subset] = f"not in baseline {baseline.id}"
        elif content.get(subset) is None or content.get(subset) != baseline_content.get(subset):
            skipped[subset] = "different samples than in the baseline (subset_content_sha256)"
        elif entry.device.accuracy is None or previous.device.accuracy is None:
            skipped[subset] = "n = 0"
        else:
            values[subset] = previous.device.accuracy - entry.device.accuracy
    return values, skipped


def accuracy_vs_baseline(settings: dict, run: Run, baseline: Run) -> Verdict:
    values, skipped = _baseline_accuracy_drops(run, baseline)
    source = (
        f"accuracy of baseline {baseline.id} device ({device_source(baseline)}) minus this run's device "
        f"({device_source(run)})"
    )
    return per_subset(settings, "max_drop", values, skipped, source)


def auc(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    """The device's AUC over files against a floor."""
    device = run.eval_summary.anomaly.device.auc
    if device is None:
        return not_judged(ONE_CLASS)
    return judged(device >= settings["min"], f"device ({device_source(run)}) AUC {device:.4f}")


def _auc_under(run: Run, other: float | None, what: str, bound: float) -> Verdict:
    """How far the device's AUC is under `other` (the host's or the baseline's, `what`)."""
    device, source = run.eval_summary.anomaly.device.auc, f"device ({device_source(run)})"
    if device is None or other is None:
        return not_judged(ONE_CLASS)
    drop = other - device
    return judged(drop <= bound, f"{what} {other:.4f} - {source} {device:.4f} = {drop:+.4f}")


def auc_drop(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    summary = run.eval_summary
    host = summary.anomaly.host.get(summary.primary_reference or "")
    if host is None:
        return not_judged("the run has no host reference (eval --references)")
    return _auc_under(run, host.auc, f"{summary.primary_reference} (host) AUC", settings["max"])


def auc_vs_baseline(settings: dict, run: Run, baseline: Run) -> Verdict:
    other = baseline.eval_summary.anomaly.device.auc
    what = f"baseline {baseline.id} device ({device_source(baseline)}) AUC"
    return _auc_under(run, other, what, settings["max_drop"])
