"""Scoring detections against an event ledger under one declared policy.

- `optimal`: one-to-one matching of detections to events within a tolerance, maximising hits, then
  substitutions, then closeness; every event is a hit, substitution or miss and every detection a hit,
  substitution, duplicate or false alarm. Rates sit beside their raw counts and the exposure.
- `tf-compat`: TensorFlow speech_commands' StreamingAccuracyStats (accuracy_utils.py) and its printed line,
  reproduced convention for convention, plus which of those conventions changed the numbers against `optimal`.
- `mlperf-sww`: the MLPerf Tiny streaming-wakeword rule (runner/streaming_ww_utils.py calc_detection_stats).
"""

from bisect import bisect_left, bisect_right
from collections import Counter

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from harness.errors import UserError, setting
from harness.results.stream_scores import (
    Convention,
    Detection,
    LabelRow,
    Latency,
    MlperfSwwScore,
    OptimalScore,
    Outcome,
    TfCompatScore,
    TfDetection,
)
from harness.streaming.detections import Detections
from harness.streaming.ledger import Event, Ledger
from harness.streaming.tf_ground_truth import TfGroundTruth, line_ranges, read_tf_ground_truth

POLICIES = ("optimal", "tf-compat", "mlperf-sww")
SILENCE = "_silence_"
NON_COMMAND_LABELS = frozenset({SILENCE, "_unknown_"})  # no action follows them
DEFAULT_TOLERANCE_MS = {"optimal": 1000, "tf-compat": 1500}  # tf-compat: test_streaming_accuracy.py's default
MLPERF_AFTER_END_MS = 1000
MLPERF_DEBOUNCE_MS = 1000
MS_PER_HOUR = 3_600_000


def per_hour(count: int, duration_ms: int) -> float | None:
    return count * MS_PER_HOUR / duration_ms if duration_ms > 0 else None


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


# ---------------------------------------------------------------- optimal


def _window(event: Event, tolerance_ms: int) -> tuple[int, int]:
    end = event.start_ms if event.end_ms is None else event.end_ms
    return event.start_ms - tolerance_ms, end + tolerance_ms


def _candidates(events: list[Event], dets: list[Detection], tolerance_ms: int) -> list[tuple[int, int]]:
    """(detection, event) pairs with the detection inside the event's tolerance window."""
    times = [d.time_ms for d in dets]
    pairs = []
    for j, event in enumerate(events):
        low, high = _window(event, tolerance_ms)
        pairs += [(i, j) for i in range(bisect_left(times, low), bisect_right(times, high))]
    return pairs


def _assign(events: list[Event], dets: list[Detection], pairs: list[tuple[int, int]]) -> dict[int, int]:
    """Detection index -> event index: most same-label pairs, then most pairs, then the least total offset."""
    if not pairs:
        return {}
    rows, cols = [i for i, _ in pairs], [j for _, j in pairs]
    n = len(dets)
    graph = coo_matrix((np.ones(len(rows)), (rows, [n + c for c in cols])), shape=(n + len(events),) * 2)
    _, component = connected_components(graph, directed=False)
    edges_by_component: dict[int, list[tuple[int, int]]] = {}
    for i, j in zip(rows, cols, strict=True):
        edges_by_component.setdefault(component[i], []).append((i, j))
    assigned = {}
    for edges in edges_by_component.values():  # independent stretches of the stream, solved one by one
        det_ids = sorted({i for i, _ in edges})
        event_ids = sorted({j for _, j in edges})
        offsets = {(i, j): abs(dets[i].time_ms - events[j].start_ms) for i, j in edges}
        most_pairs = min(len(det_ids), len(event_ids))
        sub_weight = most_pairs * max(offsets.values()) + 1.0  # one more pair outweighs any offsets
        hit_weight = sub_weight * (most_pairs + 1)  # one more hit outweighs any substitutions
        cost = np.zeros((len(det_ids), len(event_ids)))
        row_of = {i: r for r, i in enumerate(det_ids)}
        col_of = {j: c for c, j in enumerate(event_ids)}
        for (i, j), offset in offsets.items():
            gain = hit_weight if dets[i].label == events[j].label else sub_weight
            cost[row_of[i], col_of[j]] = offset - gain
        for r, c in zip(*linear_sum_assignment(cost), strict=True):
            if cost[r, c] < 0:
                assigned[det_ids[r]] = event_ids[c]
    return _first_of_twins(assigned, dets)


def _first_of_twins(assigned: dict[int, int], dets: list[Detection]) -> dict[int, int]:
    """Detections with the same label and time are interchangeable: the earlier in the file gets the match."""
    twins: dict[tuple[str, int], list[int]] = {}
    for i, det in enumerate(dets):
        twins.setdefault((det.label, det.time_ms), []).append(i)
    for group in (g for g in twins.values() if len(g) > 1):
        matched = [assigned.pop(i) for i in group if i in assigned]
        assigned.update(zip(group, matched, strict=False))
    return assigned


def _latency(hits: list[tuple[Event, Detection]], reference: str | None) -> Latency:
    ends = [e.end_ms is not None for e, _ in hits]
    measured_from = "event end" if all(ends) else "event start" if not any(ends) else "event end where known"
    values = [d.time_ms - (e.start_ms if e.end_ms is None else e.end_ms) for e, d in hits]
    if not values:
        return Latency(reference, measured_from, 0)
    v = np.array(values, dtype=float)
    return Latency(
        reference,
        measured_from,
        len(values),
        float(v.min()),
        float(np.median(v)),
        float(np.percentile(v, 90)),
        float(v.max()),
        float(v.mean()),
        values,
    )


def _match(events: list[Event], dets: list[Detection], tolerance_ms: int) -> list[tuple[str, int | None]]:
    """Per detection: its kind and the index of its event (None for a false alarm)."""
    pairs = _candidates(events, dets, tolerance_ms)
    assigned = _assign(events, dets, pairs)
    in_window: dict[int, list[int]] = {}
    for i, j in pairs:
        in_window.setdefault(i, []).append(j)
    matches = []
    for i, det in enumerate(dets):
        j = assigned.get(i)
        if j is not None:
            matches.append(("hit" if det.label == events[j].label else "substitution", j))
            continue
        # every event within tolerance is matched already (else the matching could grow): a duplicate
        nearby = in_window.get(i, [])
        j = min(nearby, key=lambda k: abs(det.time_ms - events[k].start_ms)) if nearby else None
        matches.append(("false_alarm" if j is None else "duplicate", j))
    return matches


def _commands(ledger: Ledger, detections: Detections) -> tuple[list[Event], list[Detection]]:
    events = [e for e in ledger.events if e.label not in NON_COMMAND_LABELS]
    return events, [d for d in detections.detections if d.label not in NON_COMMAND_LABELS]


def score_optimal(ledger: Ledger, detections: Detections, duration_ms: int, tolerance_ms: int) -> OptimalScore:
    events, dets = _commands(ledger, detections)
    matches = _match(events, dets, tolerance_ms)
    outcomes: list[Outcome] = []
    hits: list[tuple[Event, Detection]] = []
    for det, (kind, j) in zip(dets, matches, strict=True):
        event = None if j is None else events[j]
        if kind == "hit":
            hits.append((event, det))
        outcomes.append(
            Outcome(
                kind,
                event and event.label,
                event and event.start_ms,
                det.label,
                det.time_ms,
                det.score,
            )
        )
    matched_events = {j for kind, j in matches if kind in ("hit", "substitution")}
    outcomes += [Outcome("miss", e.label, e.start_ms) for j, e in enumerate(events) if j not in matched_events]
    outcomes.sort(key=lambda o: o.detection_ms if o.detection_ms is not None else o.event_ms)  # stable

    kinds = Counter(o.kind for o in outcomes)
    unwanted = kinds["false_alarm"] + kinds["duplicate"] + kinds["substitution"]
    return OptimalScore(
        policy="optimal",
        tolerance_ms=tolerance_ms,
        duration_ms=duration_ms,
        timing_reference=detections.reference,
        events=len(events),
        detections=len(dets),
        hits=kinds["hit"],
        misses=kinds["miss"],
        substitutions=kinds["substitution"],
        duplicates=kinds["duplicate"],
        false_alarms=kinds["false_alarm"],
        recall=_share(kinds["hit"], len(events)),
        precision=_share(kinds["hit"], len(dets)),
        false_alarms_per_hour=per_hour(kinds["false_alarm"], duration_ms),
        unwanted_triggers=unwanted,
        unwanted_triggers_per_hour=per_hour(unwanted, duration_ms),
        ignored_events=len(ledger.events) - len(events),
        ignored_detections=len(detections.detections) - len(dets),
        per_label=_per_label(outcomes),
        latency=_latency(hits, detections.reference),
        outcomes=outcomes,
    )


def _per_label(outcomes: list[Outcome]) -> list[LabelRow]:
    labels = sorted(
        {o.event_label for o in outcomes if o.event_label and o.kind in ("hit", "substitution", "miss")}
        | {o.detection_label for o in outcomes if o.detection_label}
    )
    rows = []
    for label in labels:
        by_event = Counter(
            o.kind for o in outcomes if o.event_label == label and o.kind in ("hit", "substitution", "miss")
        )
        by_detection = Counter(o.kind for o in outcomes if o.detection_label == label)
        events = sum(by_event.values())
        detections = sum(by_detection.values())
        rows.append(
            LabelRow(
                label,
                events,
                by_event["hit"],
                by_event["substitution"],
                by_event["miss"],
                detections,
                by_detection["substitution"],
                by_detection["duplicate"],
                by_detection["false_alarm"],
                _share(by_event["hit"], events),
                _share(by_detection["hit"], detections),
            )
        )
    return rows


# ---------------------------------------------------------------- tf-compat


def tf_accuracy_line(ground_truth: int, matched: int, correct: int, wrong: int, false_positives: int) -> str:
    """print_accuracy_stats' message, same arithmetic order and format (a division, then * 100)."""
    if ground_truth == 0:
        return f"No ground truth yet, {false_positives}false positives"
    m, c, w, f = (x / ground_truth * 100 for x in (matched, correct, wrong, false_positives))
    return f"{m:.1f}% matched, {c:.1f}% correct, {w:.1f}% wrong, {f:.1f}% false positive"


def _tf_scan(ground_truth: list[Event], found: list[Detection], tolerance_ms: int):
    """calculate_accuracy_stats(found_words, -1, tolerance): the first annotation in the window decides.

    TF scans the time-sorted annotations from the top for every detection; bisect finds the same first
    annotation at or after the window's start, and a Counter answers TF's matched_list.count(time).
    """
    starts = [e.start_ms for e in ground_truth]
    matched_times: list[int] = []
    times_matched: Counter = Counter()
    states = []
    for det in found:
        index = bisect_left(starts, det.time_ms - tolerance_ms)
        if index == len(starts) or starts[index] > det.time_ms + tolerance_ms:
            states.append(("False Positive", None))
            continue
        event = ground_truth[index]
        correct = event.label == det.label and times_matched[event.start_ms] == 0
        states.append(("Correct" if correct else "Wrong", index))
        matched_times.append(event.start_ms)  # appended even when counted wrong
        times_matched[event.start_ms] += 1
    return states, matched_times


def score_tf_compat(ledger: Ledger, detections: Detections, duration_ms: int, tolerance_ms: int) -> TfCompatScore:
    truth = read_tf_ground_truth(ledger)
    ground_truth = list(truth.events)  # TF reads every annotation, _silence_/_unknown_ included
    found = [d for d in detections.detections if d.label != SILENCE]  # test_streaming_accuracy drops _silence_
    states, matched_times = _tf_scan(ground_truth, found, tolerance_ms)
    counts = Counter(state for state, _ in states)
    n = len(ground_truth)
    correct, wrong, fps = counts["Correct"], counts["Wrong"], counts["False Positive"]
    per_detection = [
        TfDetection(
            d.label,
            d.time_ms,
            d.score,
            state,
            None if i is None else ground_truth[i].label,
            None if i is None else ground_truth[i].start_ms,
        )
        for d, (state, i) in zip(found, states, strict=True)
    ]
    conventions = _conventions(ledger, truth, detections, found, per_detection, matched_times, tolerance_ms)
    caveats = _reading_caveats(ledger, truth)
    if detections.reference not in (None, "window-start"):
        caveats.append(
            f"these detections are stamped at the {detections.reference}; TF's evaluator stamps the window start, "
            "so its tool would have matched different times on the same audio"
        )
    return TfCompatScore(
        policy="tf-compat",
        tolerance_ms=tolerance_ms,
        duration_ms=duration_ms,
        timing_reference=detections.reference,
        ground_truth=n,
        matched=len(matched_times),
        correct=correct,
        wrong=wrong,
        false_positives=fps,
        matched_percent=len(matched_times) / n * 100 if n else None,
        correct_percent=correct / n * 100 if n else None,
        wrong_percent=wrong / n * 100 if n else None,
        false_positive_percent=fps / n * 100 if n else None,
        line=tf_accuracy_line(n, len(matched_times), correct, wrong, fps),
        false_positives_per_hour=per_hour(fps, duration_ms),
        dropped_silence_detections=len(detections.detections) - len(found),
        per_detection=per_detection,
        conventions=conventions,
        changed_by=[c.name for c in conventions if c.changed_numbers],
        caveats=caveats,
        skipped_lines=list(truth.skipped_lines),
    )


def _reading_caveats(ledger: Ledger, truth: TfGroundTruth) -> list[str]:
    caveats = []
    if truth.converted:
        caveats.append(
            f"{ledger.path} is harness's ledger (label,start_ms,end_ms), which TF's reader cannot read: it is given "
            "each event as `label, start_ms`, the labels file TF's generate_streaming_test_wav.py writes"
        )
    if truth.skipped_lines:
        caveats.append(
            f"TF's reader skips {len(truth.skipped_lines)} line(s) of {ledger.path} that do not split into exactly "
            f"two fields at their commas (an end time, a trailing comma, a comma in quotes): lines "
            f"{line_ranges(truth.skipped_lines)}, not scored here; write them as label,start_ms to score them"
        )
    if truth.header_line is not None:
        caveats.append(
            f"line {truth.header_line} of {ledger.path} is a header: harness skips it, TF's reader would stop on it "
            "(float() fails); delete it before giving the file to TF's tool"
        )
    if ledger.unit == "s":
        caveats.append(
            "the ledger is in seconds and harness converted it to ms; TF's reader would have compared the raw "
            "numbers with millisecond detection times"
        )
    return caveats


def _conventions(ledger, truth, detections, found, per_detection, matched_times, tolerance_ms) -> list[Convention]:
    events, dets = _commands(ledger, detections)
    n = len(truth.events)
    optimal_kind = iter(kind for kind, _ in _match(events, dets, tolerance_ms))
    kinds = [next(optimal_kind) if d.label not in NON_COMMAND_LABELS else "ignored" for d in detections.detections]
    kinds = [k for d, k in zip(detections.detections, kinds, strict=True) if d.label != SILENCE]  # TF's found
    paired = [(t.state, kind) for t, kind in zip(per_detection, kinds, strict=True)]
    wrong_but_hit = sum(1 for tf, opt in paired if tf == "Wrong" and opt == "hit")
    wrong_but_duplicate = sum(1 for tf, opt in paired if tf == "Wrong" and opt == "duplicate")
    fp_but_matched = sum(
        1 for tf, opt in paired if tf == "False Positive" and opt in ("hit", "substitution", "duplicate")
    )
    repeats = len(matched_times) - len(set(matched_times))
    non_command = sum(1 for d in found if d.label in NON_COMMAND_LABELS) + sum(
        1 for e in truth.events if e.label in NON_COMMAND_LABELS
    )
    fps = sum(1 for t in per_detection if t.state == "False Positive")
    return [
        Convention(
            "first-in-window",
            "the first annotation within tolerance decides; a later same-label annotation is never tried, so a "
            "detection counts as wrong where one-to-one matching finds a hit",
            wrong_but_hit,
            wrong_but_hit > 0,
        ),
        Convention(
            "duplicates-counted-wrong",
            "a further detection of an annotation already matched counts as wrong, not as a duplicate",
            wrong_but_duplicate,
            wrong_but_duplicate > 0,
        ),
        Convention(
            "matched-counts-repeats",
            "every scored detection appends its annotation's time to the matched list, so matched % counts "
            "annotations more than once and can exceed 100 %",
            repeats,
            repeats > 0,
        ),
        Convention(
            "false-positives-over-annotations",
            "false positive % divides by the number of annotations, not by time (no annotations: a raw count)",
            fps,
            fps > 0 or n == 0,
        ),
        Convention(
            "start-time-only",
            "annotations are matched by start time only; the ledger's end times would have matched these",
            fp_but_matched,
            fp_but_matched > 0,
        ),
        Convention(
            "two-field-lines-only",
            "TF's reader skips every ledger line that does not split into exactly two fields at its commas, so "
            "those events are no annotations",
            len(truth.skipped_lines),
            bool(truth.skipped_lines),
        ),
        Convention(
            "unknown-and-silence-scored",
            "_unknown_ detections and _silence_/_unknown_ annotations are scored as commands (optimal ignores them)",
            non_command,
            non_command > 0,
        ),
    ]


# ---------------------------------------------------------------- mlperf-sww


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


# ---------------------------------------------------------------- one entry point


def score_stream(
    policy: str,
    ledger: Ledger,
    detections: Detections,
    duration_ms: int,
    tolerance_ms: int | None = None,
    wakeword: str | None = None,
) -> OptimalScore | TfCompatScore | MlperfSwwScore:
    if policy not in POLICIES:
        raise UserError(f"unknown scoring policy {policy!r}; valid: {', '.join(POLICIES)}")
    if tolerance_ms is not None and tolerance_ms < 0:
        raise UserError(f"{setting('tolerance_ms')} must not be negative (got {tolerance_ms})")
    if policy == "mlperf-sww":
        if tolerance_ms is not None:
            raise UserError(
                f"mlperf-sww has a fixed window (start to end + {MLPERF_AFTER_END_MS} ms); "
                f"drop {setting('tolerance_ms')}"
            )
        return score_mlperf_sww(ledger, detections, duration_ms, wakeword)
    tolerance = DEFAULT_TOLERANCE_MS[policy] if tolerance_ms is None else tolerance_ms
    if policy == "tf-compat":
        return score_tf_compat(ledger, detections, duration_ms, tolerance)
    return score_optimal(ledger, detections, duration_ms, tolerance)
