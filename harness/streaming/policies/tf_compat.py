"""`tf-compat`: TensorFlow speech_commands' StreamingAccuracyStats (accuracy_utils.py) and its printed line,
reproduced convention for convention, plus which of those conventions changed the numbers against `optimal`."""

from bisect import bisect_left
from collections import Counter

from harness.results.stream_scores import Convention, Detection, TfCompatScore, TfDetection
from harness.streaming.detections import Detections
from harness.streaming.ledger import Event, Ledger
from harness.streaming.policies.base import NON_COMMAND_LABELS, SILENCE, Policy, per_hour
from harness.streaming.policies.optimal import commands, match
from harness.streaming.tf_ground_truth import TfGroundTruth, line_ranges, read_tf_ground_truth


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


def score_tf_compat(
    ledger: Ledger, detections: Detections, duration_ms: int, tolerance_ms: int, wakeword: str | None = None
) -> TfCompatScore:
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
    events, dets = commands(ledger, detections)
    n = len(truth.events)
    optimal_kind = iter(kind for kind, _ in match(events, dets, tolerance_ms))
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


POLICY = Policy(
    name="tf-compat",
    summary="TensorFlow speech_commands' StreamingAccuracyStats, convention for convention",
    default_tolerance_ms=1500,  # test_streaming_accuracy.py's default
    score=score_tf_compat,
    score_type=TfCompatScore,
)
