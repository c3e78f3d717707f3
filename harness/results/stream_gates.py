"""The stream gates of `harness runs check`: the agreement of device and host detections, and the optimal
policy's recall, precision, false alarms and unwanted triggers per hour against the ledger."""

from collections import Counter
from collections.abc import Callable

from harness.results.gate_figures import device_source
from harness.results.runs import Run
from harness.results.stream_scores import OptimalScore
from harness.results.verdicts import Verdict, judged, not_judged


def agreement(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    """The share of detections device and host both made (label, time and score equal)."""
    summary = run.stream_summary
    device, host = Counter(summary.detections.device), Counter(summary.detections.host)
    common, most = sum((device & host).values()), max(sum(device.values()), sum(host.values()))
    share = common / most if most else 1.0
    counted = f"{common} of {most} detections equal on the device ({device_source(run)}) and the host"
    return judged(share >= settings["min"], f"{share:.4f}: {counted}")


def _optimal(
    run: Run, figure: str, passes: Callable[[float], bool], missing: str, counts: Callable[[OptimalScore], str]
) -> Verdict:
    """The optimal policy's `figure` judged by `passes`; `missing` says why a run scored has none, `counts` what
    the figure counts."""
    optimal = run.stream_summary.optimal
    if optimal is None:
        return not_judged("the run was not scored (harness stream --ledger LEDGER)")
    value = getattr(optimal, figure)
    if value is None:
        return not_judged(missing)
    shown = f"{value:.4f} ({counts(optimal)}; optimal policy, device ({device_source(run)}) detections)"
    return judged(passes(value), shown)


def _per_hour(optimal: OptimalScore, counted: str) -> str:
    return f"{counted} in {optimal.duration_ms / 1000:g} s"


def recall(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    return _optimal(
        run, "recall", lambda value: value >= settings["min"], "no events in the ledger",
        lambda o: f"{o.hits} of {o.events} events",
    )  # fmt: skip


def precision(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    return _optimal(
        run, "precision", lambda value: value >= settings["min"], "no detections",
        lambda o: f"{o.hits} of {o.detections} detections",
    )  # fmt: skip


def false_alarms_per_hour(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    return _optimal(
        run, "false_alarms_per_hour", lambda value: value <= settings["max"], "no detections",
        lambda o: _per_hour(o, f"{o.false_alarms} false alarms"),
    )  # fmt: skip


def unwanted_triggers_per_hour(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    return _optimal(
        run, "unwanted_triggers_per_hour", lambda value: value <= settings["max"], "no detections",
        lambda o: _per_hour(o, f"{o.unwanted_triggers} unwanted triggers"),
    )  # fmt: skip
