"""`optimal`: one-to-one matching of detections to events within a tolerance, maximising hits, then
substitutions, then closeness; every event is a hit, substitution or miss and every detection a hit,
substitution, duplicate or false alarm. Rates sit beside their raw counts and the exposure."""

from bisect import bisect_left, bisect_right
from collections import Counter

import numpy as np

from harness.results.stream_scores import Detection, LabelRow, Latency, OptimalScore, Outcome
from harness.streaming.detections import Detections
from harness.streaming.ledger import Event, Ledger
from harness.streaming.policies.base import NON_COMMAND_LABELS, Policy, per_hour, share


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
    # scipy here, not on top: importing it takes a third of a second, which a refused `harness stream` need not pay
    from scipy.optimize import linear_sum_assignment
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

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


def match(events: list[Event], dets: list[Detection], tolerance_ms: int) -> list[tuple[str, int | None]]:
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


def commands(ledger: Ledger, detections: Detections) -> tuple[list[Event], list[Detection]]:
    events = [e for e in ledger.events if e.label not in NON_COMMAND_LABELS]
    return events, [d for d in detections.detections if d.label not in NON_COMMAND_LABELS]


def score_optimal(
    ledger: Ledger, detections: Detections, duration_ms: int, tolerance_ms: int, wakeword: str | None = None
) -> OptimalScore:
    events, dets = commands(ledger, detections)
    matches = match(events, dets, tolerance_ms)
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
        recall=share(kinds["hit"], len(events)),
        precision=share(kinds["hit"], len(dets)),
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
                share(by_event["hit"], events),
                share(by_detection["hit"], detections),
            )
        )
    return rows


POLICY = Policy(
    name="optimal",
    summary="one-to-one matching within a tolerance: hits, misses, substitutions, duplicates, false alarms",
    default_tolerance_ms=1000,
    score=score_optimal,
    score_type=OptimalScore,
)
