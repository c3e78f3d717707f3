from pathlib import Path

import pytest

from harness.errors import UserError
from harness.eval.dataset import Sample
from harness.eval.demo_dataset import COLUMNS
from harness.eval.metrics import score
from harness.eval.subsets import SUBSETS, parse_subsets, select_samples


def _sample(name, **flags):
    return Sample(name, Path(name), dict.fromkeys(COLUMNS[1:], 0) | flags)


def test_count_based_f1():
    s = score([1, 1, 1, 0, 0], [1, 0, 1, 1, 0], positive_label=1)
    assert (s.tp, s.fn, s.fp, s.tn) == (2, 1, 1, 1)
    assert s.accuracy == pytest.approx(0.6)
    assert s.f1 == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))


def test_f1_with_non_person_as_the_positive_class():
    s = score([0, 0, 0], [0, 1, 0], positive_label=0)
    assert (s.tp, s.fn) == (2, 1) and s.f1 == pytest.approx(0.8)


def test_undefined_scores_are_none():
    s = score([], [], positive_label=1)
    assert s.accuracy is None and s.f1 is None


def test_subset_membership_follows_wake_vision_rules():
    far_person = _sample("a", person=1, far=1)
    far_only = _sample("b", person=-1, far=1)
    dark_non_person = _sample("c", person=0, dark=1)
    drawing = _sample("d", person=0, depiction=1, person_depiction=1)
    samples = [far_person, far_only, dark_non_person, drawing]
    assert select_samples(samples, [SUBSETS["distance_far"]]) == [far_person, far_only]
    assert SUBSETS["distance_far"].label(far_only) == 1
    assert not SUBSETS["all"].contains(far_only)
    assert select_samples(samples, [SUBSETS["lighting_dark"]]) == [dark_non_person]
    assert select_samples(samples, [SUBSETS["depiction_person"]]) == [drawing]
    assert SUBSETS["depiction_person"].positive_label == 0
    assert select_samples(samples, [SUBSETS["all"]], limit=2) == [far_person, dark_non_person]


def test_parse_subsets():
    assert [s.name for s in parse_subsets("distance_far, lighting_dark,distance_far")] == [
        "distance_far",
        "lighting_dark",
    ]
    with pytest.raises(UserError, match="valid subsets"):
        parse_subsets("distance_farr")
