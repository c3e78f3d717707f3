"""Wake Vision subsets and metrics against a hand-computed 30-row fixture in the 20-column schema."""

from pathlib import Path

import pytest

from harness.errors import UserError
from harness.eval.demo_dataset import COLUMNS
from harness.eval.metrics import pool_size, score
from harness.eval.sampling import select_samples
from harness.eval.subsets import SUBSETS, parse_subsets
from harness.results.intervals import wilson_interval
from harness.samples import Sample
from tests.forked_cli import run_harness_command

FLAGS = COLUMNS[1:]


def _row(name, person, prediction, *flags):
    values = dict.fromkeys(FLAGS, 0) | {"person": person} | dict.fromkeys(flags, 1)
    return Sample(name, Path(name), values), prediction


def _far_only(name, prediction):
    values = dict.fromkeys(FLAGS, -1) | {"person": -1, "far": 1}
    return Sample(name, Path(name), values), prediction


# Ten persons, two far-only rows (person = -1), eighteen non-persons; the prediction after each.
ROWS = [
    _row("P1", 1, 1, "far", "dark", "predominantly_female", "young"),
    _row("P2", 1, 1, "far", "dark", "predominantly_male", "middle_age"),
    _row("P3", 1, 1, "far", "normal_lighting", "predominantly_female", "older"),
    _row("P4", 1, 0, "far", "normal_lighting", "gender_unknown", "age_unknown"),
    _row("P5", 1, 1, "near", "bright", "predominantly_male", "middle_age"),
    _row("P6", 1, 1, "near", "bright", "predominantly_male", "middle_age"),
    _row("P7", 1, 1, "near", "bright", "predominantly_female", "middle_age"),
    _row("P8", 1, 0, "medium_distance", "normal_lighting", "predominantly_female", "young"),
    _row("P9", 1, 1, "medium_distance", "normal_lighting", "predominantly_male", "older"),
    _row("P10", 1, 1, "medium_distance", "normal_lighting", "gender_unknown", "age_unknown"),
    _far_only("F1", 1),
    _far_only("F2", 0),
    _row("N1", 0, 0, "non-person_non-depiction", "dark"),
    _row("N2", 0, 0, "non-person_non-depiction", "dark"),
    _row("N3", 0, 0, "non-person_non-depiction", "normal_lighting"),
    _row("N4", 0, 0, "non-person_non-depiction", "normal_lighting"),
    _row("N5", 0, 1, "non-person_non-depiction", "bright"),
    _row("N6", 0, 0, "non-person_non-depiction", "bright"),
    _row("N7", 0, 1, "depiction", "person_depiction", "normal_lighting"),
    _row("N8", 0, 0, "depiction", "person_depiction", "normal_lighting"),
    _row("N9", 0, 0, "depiction", "person_depiction", "normal_lighting"),
    _row("N10", 0, 0, "depiction", "non-person_depiction", "dark"),
    _row("N11", 0, 0, "depiction", "non-person_depiction", "dark"),
    _row("N12", 0, 0, "depiction", "non-person_depiction", "dark"),
    _row("N13", 0, 0, "non-person_non-depiction", "bright"),
    _row("N14", 0, 0, "non-person_non-depiction", "bright"),
    _row("N15", 0, 0, "non-person_non-depiction", "bright"),
    _row("N16", 0, 0, "non-person_non-depiction", "normal_lighting"),
    _row("N17", 0, 0, "non-person_non-depiction", "normal_lighting"),
    _row("N18", 0, 1, "non-person_non-depiction", "normal_lighting"),
]
SAMPLES = [sample for sample, _ in ROWS]
PREDICTIONS = [prediction for _, prediction in ROWS]


def _rate_f1(tpr, fpr):
    return 2 * tpr / (2 * tpr + fpr + 1 - tpr)


# subset: (members, accuracy, TP, FN, FP, TN, f1_wv, f1_counts), worked out by hand from the rows.
EXPECTED = {
    "all": (
        ["P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10"] + [f"N{i}" for i in range(1, 19)],
        23 / 28,
        8,
        2,
        3,
        15,
        _rate_f1(0.8, 1 / 6),
        16 / 21,
    ),
    "distance_far": (["P1", "P2", "P3", "P4", "F1", "F2"], 4 / 6, 4, 2, 3, 15, 8 / 11, 8 / 13),
    "distance_near": (["P5", "P6", "P7"], 1.0, 3, 0, 3, 15, 12 / 13, 6 / 9),
    "distance_medium": (["P8", "P9", "P10"], 2 / 3, 2, 1, 3, 15, 8 / 11, 4 / 8),
    "lighting_dark": (["P1", "P2", "N1", "N2", "N10", "N11", "N12"], 1.0, 2, 0, 0, 5, 1.0, 1.0),
    "lighting_normal": (
        ["P3", "P4", "P8", "P9", "P10", "N3", "N4", "N7", "N8", "N9", "N16", "N17", "N18"],
        9 / 13,
        3,
        2,
        2,
        6,
        _rate_f1(0.6, 0.25),
        6 / 10,
    ),
    "lighting_bright": (["P5", "P6", "P7", "N5", "N6", "N13", "N14", "N15"], 7 / 8, 3, 0, 1, 4, 2 / 2.2, 6 / 7),
    "depiction_person": (["N7", "N8", "N9"], 2 / 3, 2, 1, 2, 8, _rate_f1(2 / 3, 0.2), 4 / 7),
    "depiction_non_person": (["N10", "N11", "N12"], 1.0, 3, 0, 2, 8, 2 / 2.2, 6 / 8),
    "depiction_none": (
        ["N1", "N2", "N3", "N4", "N5", "N6", "N13", "N14", "N15", "N16", "N17", "N18"],
        10 / 12,
        10,
        2,
        2,
        8,
        _rate_f1(5 / 6, 0.2),
        20 / 24,
    ),
    "gender_female": (["P1", "P3", "P7", "P8"], 3 / 4, 3, 1, 3, 15, _rate_f1(0.75, 1 / 6), 6 / 10),
    "gender_male": (["P2", "P5", "P6", "P9"], 1.0, 4, 0, 3, 15, 12 / 13, 8 / 11),
    "gender_unknown": (["P4", "P10"], 0.5, 1, 1, 3, 15, 0.6, 2 / 6),
    "age_young": (["P1", "P8"], 0.5, 1, 1, 3, 15, 0.6, 2 / 6),
    "age_middle": (["P2", "P5", "P6", "P7"], 1.0, 4, 0, 3, 15, 12 / 13, 8 / 11),
    "age_older": (["P3", "P9"], 1.0, 2, 0, 3, 15, 12 / 13, 4 / 7),
    "age_unknown": (["P4", "P10"], 0.5, 1, 1, 3, 15, 0.6, 2 / 6),
}


def test_every_subset_is_covered_by_the_fixture():
    assert set(EXPECTED) | {"test", "validation"} == set(SUBSETS)


def test_split_subsets_select_their_split():
    from dataclasses import replace

    mixed = [replace(s, split="validation") if s.id.startswith("N1") else s for s in SAMPLES]
    validation = select_samples(mixed, [SUBSETS["validation"]])
    assert {s.id for s in validation} == {"N1", "N10", "N11", "N12", "N13", "N14", "N15", "N16", "N17", "N18"}
    assert len(select_samples(mixed, [SUBSETS["test"]])) == 28 - 10
    assert len(select_samples(mixed, [SUBSETS["all"]])) == 28


@pytest.mark.parametrize("name", list(EXPECTED))
def test_membership_and_scores_match_the_hand_computation(name):
    members, accuracy, tp, fn, fp, tn, f1_wv, f1_counts = EXPECTED[name]
    subset = SUBSETS[name]
    assert [s.id for s in select_samples(SAMPLES, [subset])] == members
    result = score(subset, SAMPLES, PREDICTIONS, pool_size(subset, SAMPLES))
    assert result.pool_incomplete is None
    assert (result.n, result.tp, result.fn, result.fp, result.tn) == (len(members), tp, fn, fp, tn)
    assert result.accuracy == pytest.approx(accuracy)
    assert result.f1_wv == pytest.approx(f1_wv)
    assert result.f1_counts == pytest.approx(f1_counts)


def _scored(subset, samples):
    predictions = [PREDICTIONS[SAMPLES.index(s)] for s in samples]
    return score(subset, samples, predictions, pool_size(subset, SAMPLES))


def test_pools_bring_in_the_negatives_f1_wv_needs():
    far = SUBSETS["distance_far"]
    without = _scored(far, select_samples(SAMPLES, [far]))
    assert without.f1_wv is None and without.f1_counts is None
    assert (without.negatives, without.pool_size, without.pool_incomplete) == (0, 18, "0 of 18")
    with_pools = select_samples(SAMPLES, [far], pools=True)
    assert len(with_pools) == 6 + 18
    full = _scored(far, with_pools)
    assert full.pool_incomplete is None
    assert (full.f1_wv, full.f1_counts) == (pytest.approx(8 / 11), pytest.approx(8 / 13))


def test_other_subsets_in_the_run_do_not_decide_the_pool():
    """lighting_dark brings in the 5 dark non-persons: a partial pool of distance_far's 18, whose F1
    would be 1.0 / 0.8 (no false positive among them) instead of 8/11 / 8/13."""
    far, dark = SUBSETS["distance_far"], SUBSETS["lighting_dark"]
    together = _scored(far, select_samples(SAMPLES, [far, dark]))
    assert together.negatives == 5 and together.pool_incomplete == "5 of 18"
    assert together.f1_wv is None and together.f1_counts is None
    pooled = _scored(far, select_samples(SAMPLES, [far, dark], pools=True))
    assert (pooled.f1_wv, pooled.f1_counts) == (pytest.approx(8 / 11), pytest.approx(8 / 13))
    assert _scored(dark, select_samples(SAMPLES, [far, dark])).f1_wv == pytest.approx(1.0)  # its pool is complete


def test_limit_with_pools_cuts_the_members_never_the_pool():
    far = SUBSETS["distance_far"]
    chosen = select_samples(SAMPLES, [far], limit=2, pools=True)
    assert [s.id for s in chosen] == ["P1", "P2", *(f"N{i}" for i in range(1, 19))]
    limited = _scored(far, chosen)
    assert limited.n == 2 and limited.pool_incomplete is None
    assert limited.f1_wv == pytest.approx(_rate_f1(1.0, 3 / 18))
    assert len(select_samples(SAMPLES, [far], limit=2)) == 2


def test_wilson_interval_matches_the_textbook():
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(0, 0) is None
    low, high = wilson_interval(5, 5)
    assert high == 1.0 and low == pytest.approx(0.5655, abs=1e-4)


def test_parse_subsets():
    assert [s.name for s in parse_subsets("distance_far, lighting_dark,distance_far")] == [
        "distance_far",
        "lighting_dark",
    ]
    with pytest.raises(UserError, match="valid subsets"):
        parse_subsets("distance_farr")


def test_score_command_gives_the_same_numbers_from_csv_files(tmp_path):
    import csv
    import json
    import os

    labels, predictions = tmp_path / "labels.csv", tmp_path / "predictions.csv"
    with open(labels, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows([[s.id, *(s.flags[c] for c in FLAGS)] for s in SAMPLES])
    with open(predictions, "w", newline="") as f:
        csv.writer(f).writerows([("filename", "prediction"), *((s.id, p) for s, p in ROWS[:-1])])
    done = run_harness_command(
        ["dataset", "score", "--labels", str(labels), "--predictions", str(predictions), "--json"],
        env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["scored"], result["without_prediction"]) == (29, 1)
    far = result["subsets"]["distance_far"]
    assert (far["tp"], far["fn"], far["fp"], far["tn"]) == (4, 2, 2, 15)  # N18, a false positive, is unscored
    bad = run_harness_command(
        ["dataset", "score", "--labels", str(labels), "--predictions", str(labels)], env=os.environ.copy()
    )
    assert bad.returncode == 2 and "filename,prediction" in bad.stderr


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("P1,1\nP2\n", r"line 3: the row is short"),
        ("P1,1\nP2,7\n", r"line 3: prediction '7' for P2 is not 0 or 1"),
        ("P1,-1\n", r"line 2: prediction '-1' for P1 is not 0 or 1"),
        ("P1,1\nP2,0\nP1,0\n", r"line 4: P1 was predicted already on line 2"),
    ],
)
def test_bad_prediction_files_name_the_file_and_line(tmp_path, rows, message):
    from harness.eval.score_file import read_predictions

    path = tmp_path / "predictions.csv"
    path.write_text("filename,prediction\n" + rows)
    with pytest.raises(UserError, match=message) as raised:
        read_predictions(path)
    assert str(path) in str(raised.value)
