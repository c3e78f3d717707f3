"""Stream scoring on small ledgers, counts computed by hand under every policy.

tf-compat lines follow TensorFlow's accuracy_utils.py arithmetic (count / annotations * 100, one decimal);
the duplicate case is the fixture in ../shared/reference/voice_trigger_streaming_eval.txt (200 % matched).
"""

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.streaming.detections import Detection, Detections, load_detections, write_detections
from harness.streaming.ledger import Event, Ledger
from harness.streaming.scoring import score_stream

MINUTE_MS = 60_000


def _ledger(*events: tuple) -> Ledger:
    return Ledger("test.csv", "ms", tuple(Event(*e) for e in events))


def _detections(*found: tuple, reference: str = "window-start") -> Detections:
    return Detections("d.csv", reference, tuple(Detection(label, t, 0.9, reference) for label, t in found))


def _all(ledger, detections, duration_ms=10_000, wakeword=None):
    return (
        score_stream("optimal", ledger, detections, duration_ms, 1000),
        score_stream("tf-compat", ledger, detections, duration_ms, 1000),
        score_stream("mlperf-sww", ledger, detections, duration_ms, None, wakeword),
    )


def _counts(optimal):
    return (optimal.hits, optimal.misses, optimal.substitutions, optimal.duplicates, optimal.false_alarms)


def test_known_timestamp():
    optimal, tf, mlperf = _all(_ledger(("yes", 1000, 2000)), _detections(("yes", 1000)))
    assert _counts(optimal) == (1, 0, 0, 0, 0)
    assert (optimal.recall, optimal.precision) == (1.0, 1.0)
    assert optimal.latency.values_ms == [-1000]  # a window-start stamp, 1000 ms before the word's end
    assert tf.line == "100.0% matched, 100.0% correct, 0.0% wrong, 0.0% false positive"
    assert tf.changed_by == []
    assert mlperf.line == "1 True Positives, 0 False negatives, 0 False Positives"


def test_unmatched_detection():
    optimal, tf, mlperf = _all(_ledger(("yes", 1000, 2000)), _detections(("yes", 1000), ("yes", 5000)))
    assert _counts(optimal) == (1, 0, 0, 0, 1)
    assert optimal.precision == 0.5
    assert optimal.false_alarms_per_hour == pytest.approx(360.0)  # 1 in 10 s
    assert optimal.duration_ms == 10_000
    assert tf.line == "100.0% matched, 100.0% correct, 0.0% wrong, 100.0% false positive"
    assert tf.changed_by == ["false-positives-over-annotations"]
    assert tf.false_positives_per_hour == pytest.approx(360.0)
    assert mlperf.line == "1 True Positives, 0 False negatives, 1 False Positives"
    assert mlperf.false_positive_ms == [5000]


def test_duplicate_is_200_percent_matched_in_tf():
    optimal, tf, mlperf = _all(_ledger(("yes", 1000, 2000)), _detections(("yes", 1000), ("yes", 1600)))
    assert _counts(optimal) == (1, 0, 0, 1, 0)
    assert optimal.unwanted_triggers == 1
    assert tf.line == "200.0% matched, 100.0% correct, 100.0% wrong, 0.0% false positive"
    assert [d.state for d in tf.per_detection] == ["Correct", "Wrong"]
    assert tf.changed_by == ["duplicates-counted-wrong", "matched-counts-repeats"]
    assert mlperf.line == "1 True Positives, 0 False negatives, 0 False Positives"  # both fall in one window
    same_instant = score_stream(
        "tf-compat", _ledger(("yes", 1000, 2000)), _detections(("yes", 1000), ("yes", 1000)), 10_000, 1000
    )
    assert same_instant.changed_by == ["duplicates-counted-wrong", "matched-counts-repeats"]


def test_nearby_events_with_overlapping_windows():
    # the reference's case: no@1000, yes@1800, one yes detection at 1500, tolerance 1000
    optimal, tf, mlperf = _all(
        _ledger(("no", 1000, 1500), ("yes", 1800, 2300)), _detections(("yes", 1500)), wakeword="yes"
    )
    assert _counts(optimal) == (1, 1, 0, 0, 0)  # the yes is matched to the yes; the no is missed
    assert tf.line == "50.0% matched, 0.0% correct, 50.0% wrong, 0.0% false positive"  # the first annotation decides
    assert tf.per_detection[0].ground_truth_label == "no"
    assert tf.changed_by == ["first-in-window"]
    # MLPerf: wakeword yes's window is 1800..3300, so the early detection is a false positive and yes is missed
    assert mlperf.line == "0 True Positives, 1 False negatives, 1 False Positives"


def test_one_to_one_matching_beats_first_in_window():
    ledger = _ledger(("yes", 1000, 2000), ("yes", 2500, 3500))
    optimal, tf, _ = _all(ledger, _detections(("yes", 2100), ("yes", 2200)))
    assert _counts(optimal) == (2, 0, 0, 0, 0)
    assert tf.line == "100.0% matched, 50.0% correct, 50.0% wrong, 0.0% false positive"
    assert "first-in-window" in tf.changed_by


def test_substitution():
    optimal, tf, mlperf = _all(_ledger(("yes", 1000, 2000)), _detections(("no", 1200)), wakeword="yes")
    assert _counts(optimal) == (0, 0, 1, 0, 0)
    rows = {row.label: row for row in optimal.per_label}
    assert (rows["yes"].events, rows["yes"].substitutions) == (1, 1)
    assert (rows["no"].detections, rows["no"].wrong_label) == (1, 1)
    assert tf.line == "100.0% matched, 0.0% correct, 100.0% wrong, 0.0% false positive"
    assert tf.changed_by == []  # here TF and one-to-one matching agree
    assert mlperf.line == "0 True Positives, 1 False negatives, 0 False Positives"
    assert mlperf.ignored_detections == 1


def test_background_only():
    detections = _detections(("yes", 2000), ("yes", 2900), ("yes", 3800), ("yes", 9000))
    optimal, tf, mlperf = _all(_ledger(), detections, duration_ms=MINUTE_MS)
    assert _counts(optimal) == (0, 0, 0, 0, 4)
    assert optimal.recall is None
    assert optimal.false_alarms_per_hour == pytest.approx(240.0)
    assert tf.line == "No ground truth yet, 4false positives"
    # MLPerf merges from each kept false positive: 2900 joins 2000, 3800 is 1800 ms after 2000 so it stands
    assert mlperf.line == "0 True Positives, 0 False negatives, 3 False Positives"
    assert (mlperf.false_detections_before_debounce, mlperf.false_positive_ms) == (4, [2000, 3800, 9000])
    assert mlperf.false_positives_per_hour == pytest.approx(180.0)


def test_silence_and_unknown():
    ledger = _ledger(("yes", 1000, 2000), ("_unknown_", 4000, 5000))
    detections = _detections(("_silence_", 1000), ("yes", 1100), ("_unknown_", 4100))
    optimal = score_stream("optimal", ledger, detections, 10_000, 1000)
    assert (optimal.events, optimal.detections, optimal.ignored_events, optimal.ignored_detections) == (1, 1, 1, 2)
    assert _counts(optimal) == (1, 0, 0, 0, 0)
    tf = score_stream("tf-compat", ledger, detections, 10_000, 1000)
    assert tf.dropped_silence_detections == 1
    assert tf.line == "100.0% matched, 100.0% correct, 0.0% wrong, 0.0% false positive"  # _unknown_ matched _unknown_
    assert tf.changed_by == ["unknown-and-silence-scored"]


def test_mlperf_needs_end_times_and_one_wakeword():
    from harness.errors import UserError

    with pytest.raises(UserError, match="end time"):
        score_stream("mlperf-sww", _ledger(("yes", 1000)), _detections(), 10_000)
    with pytest.raises(UserError, match="'wakeword'"):
        score_stream("mlperf-sww", _ledger(("yes", 1000, 2000), ("no", 3000, 4000)), _detections(), 10_000)
    with pytest.raises(UserError, match="fixed window"):
        score_stream("mlperf-sww", _ledger(("yes", 1000, 2000)), _detections(), 10_000, 500)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_cli_scores_and_prints_every_policy(tmp_path, capsys):
    ledger = _write(tmp_path / "l.csv", "yes, 1000.000000\n")  # the way TF's generator writes it
    detections = tmp_path / "d.csv"
    write_detections(
        detections, [Detection("yes", 1000, 0.91, "window-start"), Detection("yes", 1600, 0.8, "window-start")]
    )
    assert load_detections(detections).detections[1] == Detection("yes", 1600, 0.8, "window-start")
    common = ["stream", "score", "--ledger", str(ledger), "--detections", str(detections), "--duration-ms", "10000"]
    assert main([*common, "--policy", "tf-compat", "--tolerance-ms", "1000"]) == 0
    out = capsys.readouterr().out
    assert "200.0% matched, 100.0% correct, 100.0% wrong, 0.0% false positive" in out
    assert main([*common, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["policy"], result["hits"], result["duplicates"], result["duration_ms"]) == ("optimal", 1, 1, 10000)
    assert main(common) == 0
    out = capsys.readouterr().out
    assert "1 / 1 events" in out and "1 / 2 detections" in out and "0 in 10 s" in out
    assert main([*common, "--policy", "mlperf-sww"]) == 2  # no end time in this ledger
    assert "end time" in capsys.readouterr().err
    assert main([*common[:-2], "--duration-ms", "1500"]) == 2
    assert "after the end of the audio" in capsys.readouterr().err


def _tf_literal(ground_truth, found, tolerance_ms):
    """accuracy_utils.py's calculate_accuracy_stats(found, -1, tolerance) loop, transcribed step by step."""
    correct = wrong = false_positives = 0
    matched = []
    for label, t in found:
        earliest, latest = t - tolerance_ms, t + tolerance_ms
        found_one = False
        for gt_label, gt_time in ground_truth:
            if gt_time > latest:
                break
            if gt_time < earliest:
                continue
            if gt_label == label and matched.count(gt_time) == 0:
                correct += 1
            else:
                wrong += 1
            matched.append(gt_time)
            found_one = True
            break
        if not found_one:
            false_positives += 1
    return len(matched), correct, wrong, false_positives


def _best_by_enumeration(events, dets, tolerance_ms):
    """(hits, substitutions) of the lexicographically best one-to-one matching, by trying them all."""
    best = (0, 0)

    def walk(i, used, hits, subs):
        nonlocal best
        best = max(best, (hits, subs))
        if i == len(dets):
            return
        walk(i + 1, used, hits, subs)
        for j, (label, start, end) in enumerate(events):
            if j not in used and start - tolerance_ms <= dets[i][1] <= end + tolerance_ms:
                same = label == dets[i][0]
                walk(i + 1, used | {j}, hits + same, subs + (not same))

    walk(0, frozenset(), 0, 0)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_random_small_cases_against_literal_tf_and_exhaustive_matching(seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    starts = sorted(int(t) for t in rng.integers(0, 8000, rng.integers(0, 5)))
    events = [(str(rng.choice(["yes", "no"])), s, s + int(rng.integers(0, 1200))) for s in starts]
    found = sorted(
        ((str(rng.choice(["yes", "no"])), int(t)) for t in rng.integers(0, 9000, rng.integers(0, 5))),
        key=lambda d: d[1],
    )
    ledger = _ledger(*events)
    detections = _detections(*found)
    tf = score_stream("tf-compat", ledger, detections, 10_000, 700)
    assert (tf.matched, tf.correct, tf.wrong, tf.false_positives) == _tf_literal(
        [(label, start) for label, start, _ in events], found, 700
    )
    optimal = score_stream("optimal", ledger, detections, 10_000, 700)
    assert (optimal.hits, optimal.substitutions) == _best_by_enumeration(events, found, 700)
    assert optimal.hits + optimal.substitutions + optimal.misses == len(events)
    assert optimal.hits + optimal.substitutions + optimal.duplicates + optimal.false_alarms == len(found)


def test_identical_detections_give_the_match_to_the_first():
    from harness.streaming.policies.optimal import _first_of_twins

    twins = [Detection("yes", 1000, 0.9, "decision"), Detection("yes", 1000, 0.8, "decision")]
    assert _first_of_twins({1: 0}, twins) == {0: 0}
