"""`mlperf-sww`: the MLPerf Tiny streaming-wakeword rule (runner/streaming_ww_utils.py calc_detection_stats)."""

from harness.errors import UserError, setting
from harness.results.stream_scores import MlperfSwwScore
from harness.streaming.detections import Detections
from harness.streaming.ledger import Event, Ledger
from harness.streaming.policies.base import NON_COMMAND_LABELS, Policy, per_hour

MLPERF_AFTER_END_MS = 1000
MLPERF_DEBOUNCE_MS = 1000


def _check_wakeword(ledger: Ledger, detections: Detections, wakeword: str) -> None:
    """A wakeword no event and no detection carries would score nothing: every event and detection ignored."""
    for source, where in ((ledger.events, f"the ledger {ledger.path}"), (detections.detections, "the detections")):
        labels = sorted({x.label for x in source})
        if wakeword in labels:
            return
        if labels:
            raise UserError(
                f"wakeword {wakeword!r} is not in {where}, whose labels are {', '.join(labels)}; "
                f"name one of them with {setting('wakeword')}"
            )


def _choose_wakeword(ledger: Ledger, detections: Detections, wakeword: str | None) -> str | None:
    if wakeword:
        _check_wakeword(ledger, detections, wakeword)
        return wakeword
    for source in (ledger.events, detections.detections):
        labels = sorted({x.label for x in source} - NON_COMMAND_LABELS)
        if len(labels) == 1:
            return labels[0]
        if labels:
            raise UserError(f"mlperf-sww scores one wakeword; name it with {setting('wakeword')} ({', '.join(labels)})")
    return None


def score_mlperf_sww(
    ledger: Ledger, detections: Detections, duration_ms: int, wakeword: str | None = None
) -> MlperfSwwScore:
    wakeword = _choose_wakeword(ledger, detections, wakeword)
    windows = [e for e in ledger.events if e.label == wakeword]
    open_ended = [e for e in windows if e.end_ms is None]
    if open_ended:
        raise UserError(
            f"mlperf-sww needs each wakeword's end time; {ledger.path} line {open_ended[0].line} has none "
            "(add an end_ms column; `harness stream build` writes it)"
        )
    remaining = [d.time_ms for d in detections.detections if d.label == wakeword]
    ignored = len(detections.detections) - len(remaining)
    true_positive, false_negative = [], []
    for event in windows:  # in ledger order; a detection serves only the first window that holds it

        def inside(t: int, event: Event = event) -> bool:
            return event.start_ms <= t <= event.end_ms + MLPERF_AFTER_END_MS

        (true_positive if any(map(inside, remaining)) else false_negative).append(event.start_ms)
        remaining = [t for t in remaining if not inside(t)]
    before_debounce = len(remaining)
    false_positive = []
    for t in remaining:  # each kept false positive swallows those in the following second
        if false_positive and false_positive[-1] < t <= false_positive[-1] + MLPERF_DEBOUNCE_MS:
            continue
        false_positive.append(t)
    caveats = []
    if detections.reference not in (None, "decision"):
        caveats.append(
            f"MLPerf times the DUT's detection pulse (a decision time); these detections are stamped at the "
            f"{detections.reference}"
        )
    tp, fn, fp = len(true_positive), len(false_negative), len(false_positive)
    return MlperfSwwScore(
        policy="mlperf-sww",
        wakeword=wakeword,
        after_end_ms=MLPERF_AFTER_END_MS,
        debounce_ms=MLPERF_DEBOUNCE_MS,
        duration_ms=duration_ms,
        timing_reference=detections.reference,
        wakewords=len(windows),
        true_positives=tp,
        false_negatives=fn,
        false_positives=fp,
        false_detections_before_debounce=before_debounce,
        ignored_detections=ignored,
        true_positive_ms=true_positive,
        false_negative_ms=false_negative,
        false_positive_ms=false_positive,
        false_positives_per_hour=per_hour(fp, duration_ms),
        line=f"{tp} True Positives, {fn} False negatives, {fp} False Positives",
        caveats=caveats,
    )


def _score(ledger: Ledger, detections: Detections, duration_ms: int, tolerance_ms: int | None, wakeword: str | None):
    return score_mlperf_sww(ledger, detections, duration_ms, wakeword)


POLICY = Policy(
    name="mlperf-sww",
    summary="MLPerf Tiny's streaming-wakeword rule: one wakeword, a fixed window, a 1 s debounce",
    default_tolerance_ms=None,
    score=_score,
    score_type=MlperfSwwScore,
    fixed_window=f"start to end + {MLPERF_AFTER_END_MS} ms",
)
