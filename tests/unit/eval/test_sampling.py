"""`--limit N` draws N members per subset, seeded and class-stratified; pools are added whole; F1 is only
given over a whole pool, and says why not."""

import csv
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from harness.cli.app import build_parser
from harness.eval import sampling
from harness.eval.dataset import load_dataset
from harness.eval.demo_dataset import COLUMNS
from harness.eval.metrics import pool_size, score
from harness.eval.sampling import class_quotas, drawn_members, select
from harness.eval.score_file import score_file, score_labels
from harness.eval.settings import EvalSettings
from harness.eval.subsets import ClassSubset, parse_subsets
from harness.samples import Sample


@pytest.fixture(scope="module")
def demo():
    return load_dataset("demo").samples  # 52 persons (24 far), 46 non-persons


def test_each_subset_gets_its_limit_whatever_comes_first_in_the_dataset(demo):
    """Exactly its limit, and scored over that draw alone: the union holds other subsets' dark members."""
    far, dark = parse_subsets("distance_far,lighting_dark")  # 24 far, 33 dark
    chosen = select(demo, [far, dark], limit=24, order="sampled")
    assert sum(dark.contains(s) for s in chosen.samples) > 24
    for subset in (far, dark):
        drawn = chosen.member_mask(subset, chosen.samples)
        assert drawn.sum() == 24 and all(subset.contains(s) for s in np.array(chosen.samples)[drawn])
        assert score(subset, chosen.samples, [1] * len(drawn), pool_size(subset, demo), members=drawn).n == 24


def test_a_pool_counts_towards_false_positives_only_not_the_subsets_n(demo):
    (every,) = parse_subsets("all")
    chosen = select(demo, [every], limit=10, order="sampled", pools=True)
    assert len(chosen.samples) == 5 + 46
    drawn = chosen.member_mask(every, chosen.samples)
    result = score(every, chosen.samples, [1] * len(drawn), pool_size(every, demo), members=drawn)
    assert (result.n, result.accuracy) == (10, 0.5)  # its 5 persons and 5 non-persons, not the 46 of the pool
    assert (result.tp, result.fn, result.fp, result.tn) == (5, 0, 46, 0) and result.pool_incomplete is None


def test_a_subset_of_both_classes_is_drawn_in_proportion_to_them(demo):
    (every,) = parse_subsets("all")
    chosen = select(demo, [every], limit=10, order="sampled").samples
    assert Counter(s.person for s in chosen) == {1: 5, 0: 5}  # 52/46 of 98, largest remainder


def test_class_quotas_round_by_largest_remainder():
    assert class_quotas([52, 46], 10) == [5, 5]
    assert class_quotas([10, 10, 6, 14], 6) == [2, 1, 1, 2]  # 1.5, 1.5, 0.9, 2.1: ties to the earlier class
    assert class_quotas([3, 1], 4) == [3, 1]


def _clips():
    """Keyword clips in the order a dataset lists them: every yes first, then no, silence, unknown."""
    counts = {0: 10, 1: 6, 2: 10, 3: 14}  # silence, unknown, yes, no (micro_speech's class order)
    order = [2] * counts[2] + [3] * counts[3] + [0] * counts[0] + [1] * counts[1]
    return [Sample(f"c{i}", Path(f"c{i}.wav"), {"label": label}) for i, label in enumerate(order)]


def test_keyword_subsets_each_get_their_limit_and_all_is_stratified():
    clips = _clips()
    every, yes, no = ClassSubset("all", None), ClassSubset("yes", 2), ClassSubset("no", 3)
    chosen = select(clips, [every, yes, no], limit=6, order="sampled")
    labels = Counter(s.label for s in chosen.samples)
    assert (labels[2], labels[3]) == (6, 6)  # the first six clips are all "yes"
    drawn = chosen.member_mask(every, chosen.samples)
    assert Counter(s.label for s in np.array(chosen.samples)[drawn]) == {0: 2, 1: 1, 2: 1, 3: 2}
    assert score(every, chosen.samples, [s.label for s in chosen.samples], 0, members=drawn).n == 6
    drawn = drawn_members(every, clips, 6, np.random.default_rng(3).permutation(len(clips)))
    assert Counter(clips[i].label for i in drawn) == {0: 2, 1: 1, 2: 1, 3: 2}  # 10/6/10/14 of 40


def test_the_seed_decides_the_draw_and_dataset_order_takes_the_first(demo):
    subsets = parse_subsets("distance_far,lighting_dark")
    ids = {seed: [s.id for s in select(demo, subsets, 10, "sampled", seed).samples] for seed in (0, 0, 1)}
    assert ids[0] == [s.id for s in select(demo, subsets, 10, "sampled", 0).samples]
    assert ids[0] != ids[1]
    first = [s.id for s in demo if any(sub.contains(s) for sub in subsets)][:10]
    assert [s.id for s in select(demo, subsets, 10, "dataset", 1).samples] == first


def test_seed_order_and_pools_flags_reach_the_run_settings_and_its_resume_record():
    args = build_parser().parse_args(["eval", "--limit", "5", "--seed", "7", "--order", "dataset", "--no-pools"])
    settings = EvalSettings.from_args(args)
    assert (settings.seed, settings.order, settings.pools) == (7, "dataset", False)
    assert EvalSettings.restored(settings.stored()) == settings
    assert EvalSettings.from_args(build_parser().parse_args(["eval", "--pools"])).pools is True
    assert (EvalSettings().seed, EvalSettings().order, EvalSettings().pools) == (0, "sampled", None)


def test_pools_are_added_by_default_without_a_limit_and_say_their_cost(demo, monkeypatch):
    (far,) = parse_subsets("distance_far")
    whole = select(demo, [far], pools=None)
    assert len(whole.samples) == 24 + 46 and whole.pool_added == {"distance_far": 46}
    limited = select(demo, [far], limit=5, order="sampled", pools=None)
    assert len(limited.samples) == 5 and "--limit 5 left the pool out" in limited.pool_left_out["distance_far"]
    assert len(select(demo, [far], limit=5, order="sampled", pools=True).samples) == 5 + 46
    skipped = select(demo, [far], pools=False)
    assert len(skipped.samples) == 24 and "--no-pools" in skipped.pool_left_out["distance_far"]
    monkeypatch.setattr(sampling, "AUTO_POOL_SAMPLES", 45)
    assert "more than 45 samples" in select(demo, [far], pools=None).pool_left_out["distance_far"]


def test_an_incomplete_pool_gives_no_f1_and_says_why(demo):
    (far,) = parse_subsets("distance_far")
    chosen = select(demo, [far], limit=5, order="sampled", pools=None)
    result = score(far, chosen.samples, [1] * 5, pool_size(far, demo), chosen.pool_left_out["distance_far"])
    assert result.f1_wv is None and result.f1_counts is None
    assert result.f1_unavailable.startswith("only 0 of the 46 samples of its negative pool evaluated (--limit 5")


def test_a_folder_of_far_persons_only_gives_no_f1_and_says_why(tmp_path):
    labels, predictions = tmp_path / "labels.csv", tmp_path / "predictions.csv"
    rows = [dict.fromkeys(COLUMNS[1:], 0) | {"filename": f"p{i}.jpg", "person": 1, "far": 1} for i in range(4)]
    with open(labels, "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    predictions.write_text("filename,prediction\n" + "".join(f"p{i}.jpg,{i % 2}\n" for i in range(4)))
    far = score_file(score_labels(labels), predictions, parse_subsets("distance_far"))["subsets"]["distance_far"]
    assert far["accuracy"] == 0.5 and far["pool_size"] == 0
    assert far["f1_counts"] is None and far["f1_wv"] is None
    assert far["f1_unavailable"] == "the dataset has no negatives for this subset (its F1 pool is empty)"
