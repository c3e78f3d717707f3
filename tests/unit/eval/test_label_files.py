"""Wake Vision's labels as published: the cleaned label files (alone, or over the flag CSVs' person label),
plain binary label files, and the members whose flags contradict their person label."""

import csv
import json
import os

import pytest

from harness.errors import UserError
from harness.eval.dataset import load_dataset
from harness.eval.demo_dataset import COLUMNS
from harness.eval.score_file import default_subsets, score_file, score_labels
from harness.eval.subsets import SUBSETS, flag_contradictions
from harness.results.manifest import DatasetProvenance
from tests.conftest import SHARED
from tests.forked_cli import run_harness_command

CLEANED = SHARED / "fixtures" / "labels" / "wv_validation_cleaned.csv"


def _flag_rows(path, rows):
    """rows: (filename, person, flags set to 1)."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for name, person, flags in rows:
            writer.writerow([name, person, *(int(c in flags) for c in COLUMNS[2:])])


def _write(path, text):
    path.write_text(text)
    return path


def _harness(*args):
    return run_harness_command([*args], env=os.environ.copy())


@pytest.fixture
def published(tmp_path):
    """A published-layout folder: the flag CSV and, beside it, the cleaned labels of some of its rows."""
    root = tmp_path / "wv"
    (root / "images").mkdir(parents=True)
    _flag_rows(
        root / "wake_vision_test.csv",
        [
            ("far_ok.jpg", 1, {"far"}),
            ("far_relabelled.jpg", 1, {"far"}),  # clean: 0, yet flagged far
            ("drawn_person.jpg", 0, {"person_depiction", "depiction"}),  # clean: 1, yet a non-person depiction
            ("statue.jpg", 0, {"non-person_depiction", "depiction"}),  # clean: -2, a non-person either way
            ("street.jpg", 0, {"non-person_non-depiction"}),
            ("unlisted.jpg", 1, {"near"}),
        ],
    )
    _write(
        root / "wv_test_cleaned.csv",
        "filename,original_label,clean_label\nfar_ok.jpg,1,1\nfar_relabelled.jpg,1,0\ndrawn_person.jpg,0,1\n"
        "statue.jpg,0,-2\nstreet.jpg,0,0\n",
    )
    return root


def test_clean_label_wins_over_the_flag_csv_and_minus_two_is_a_non_person(published):
    dataset = load_dataset(str(published))
    people = {s.id: s.person for s in dataset.samples}
    assert people == {
        "far_ok.jpg": 1,
        "far_relabelled.jpg": 0,
        "drawn_person.jpg": 1,
        "statue.jpg": 0,
        "street.jpg": 0,
        "unlisted.jpg": 1,
    }
    clean = dataset.clean_labels
    assert (clean.changed, clean.depictions, clean.excluded, clean.not_listed) == (2, 1, 0, 1)
    assert load_dataset(str(published), clean_labels="none").clean_labels is None
    assert {s.id: s.person for s in load_dataset(str(published), clean_labels="none").samples}[
        "far_relabelled.jpg"
    ] == 1

    far, drawn = SUBSETS["distance_far"], SUBSETS["depiction_person"]
    relabelled = next(s for s in dataset.samples if s.id == "far_relabelled.jpg")
    assert far.contains(relabelled) and far.label(relabelled) == 0  # a member by its flag, with its clean label
    assert flag_contradictions(dataset.samples, [far, drawn]) == 2
    assert flag_contradictions(dataset.samples, [SUBSETS["all"], SUBSETS["lighting_dark"]]) == 0
    counted = flag_contradictions(dataset.samples, [far, drawn])
    recorded = DatasetProvenance.of(dataset, [far, drawn], list(dataset.samples), flag_contradictions=counted)
    assert recorded.clean_labels.changed == 2 and recorded.flag_contradictions == 2


def test_score_joins_clean_labels_and_warns_of_contradicting_rows(tmp_path, published):
    predictions = _write(
        tmp_path / "p.csv",
        "filename,prediction\nfar_ok.jpg,1\nfar_relabelled.jpg,0\ndrawn_person.jpg,1\nstatue.jpg,0\nstreet.jpg,0\n"
        "unlisted.jpg,1\n",
    )
    done = _harness(
        "dataset",
        "score",
        "--labels",
        str(published / "wake_vision_test.csv"),
        "--clean-labels",
        str(published / "wv_test_cleaned.csv"),
        "--predictions",
        str(predictions),
        "--subset",
        "all,distance_far",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["flag_contradictions"] == 1 and result["clean_labels"]["changed"] == 2
    assert "warning: 1 members of all, distance_far have flags that contradict" in done.stderr
    assert result["subsets"]["all"]["accuracy"] == 1.0  # every prediction is the clean label
    assert result["subsets"]["distance_far"]["n"] == 2


@pytest.mark.parametrize("spec", ["none", " None "])
def test_clean_labels_none_means_none_for_score_as_for_eval(published, spec):
    flags = published / "wake_vision_test.csv"
    scored = score_labels(flags, spec)
    assert scored.clean_labels is None and {s.id: s.person for s in scored.samples}["far_relabelled.jpg"] == 1
    assert load_dataset(str(published), clean_labels=spec).clean_labels is None


def test_clean_labels_are_named_alike_for_score_and_eval(published):
    cleaned = f"{published / 'wv_test_cleaned.csv'},"  # a trailing comma names nothing more
    assert score_labels(published / "wake_vision_test.csv", cleaned).clean_labels.changed == 2
    assert load_dataset(str(published), clean_labels=cleaned).clean_labels.changed == 2
    for load in (
        lambda: score_labels(published / "wake_vision_test.csv", " , "),
        lambda: load_dataset(str(published), clean_labels=","),
    ):
        with pytest.raises(UserError, match="names no file"):
            load()


def test_cleaned_labels_alone_give_accuracy_and_f1_and_refuse_a_fine_grained_subset(tmp_path):
    labels = _write(
        tmp_path / "wv_validation_cleaned.csv",
        "filename,original_label,clean_label\na.jpg,1,1\nb.jpg,1,1\nc.jpg,0,0\nd.jpg,0,-2\ne.jpg,1,0\na.jpg,1,1\n",
    )
    predictions = _write(tmp_path / "p.csv", "filename,prediction\na.jpg,1\nb.jpg,0\nc.jpg,0\nd.jpg,0\ne.jpg,1\n")
    dataset = score_labels(labels)
    assert dataset.splits == ("validation",)  # from the published name
    assert [s.name for s in default_subsets(dataset)] == ["all", "validation"]
    scored = score_file(dataset, predictions, [SUBSETS["all"]])["subsets"]["all"]
    # persons a, b; non-persons c, d (-2), e: TP 1, FN 1, FP 1, TN 2
    assert (scored["n"], scored["tp"], scored["fn"], scored["fp"], scored["tn"]) == (5, 1, 1, 1, 2)
    assert scored["accuracy"] == pytest.approx(3 / 5) and scored["f1_counts"] == pytest.approx(2 / 4)
    with pytest.raises(UserError, match="subset distance_far needs the fine-grained flag far"):
        score_file(dataset, predictions, [SUBSETS["distance_far"]])
    with pytest.raises(UserError, match=r"line 3: clean_label '7'"):
        score_labels(_write(tmp_path / "bad.csv", "filename,original_label,clean_label\na.jpg,1,1\nb.jpg,1,7\n"))


def test_a_folder_of_images_and_cleaned_labels_is_a_dataset(tmp_path):
    root = tmp_path / "cleaned_only"
    (root / "images").mkdir(parents=True)
    _write(root / "wv_test_cleaned.csv", "filename,original_label,clean_label\na.jpg,1,1\nb.jpg,0,-2\n")
    dataset = load_dataset(str(root), ["test"])
    assert [(s.id, s.person, s.split) for s in dataset.samples] == [("a.jpg", 1, "test"), ("b.jpg", 0, "test")]


def test_plain_binary_labels_score(tmp_path):
    labels = _write(tmp_path / "labels.csv", "filename,label\na.png,1\nb.png,0\nc.png,0\nd.png,1\n")
    predictions = _write(tmp_path / "p.csv", "filename,prediction\na.png,1\nb.png,1\nc.png,0\nd.png,1\n")
    done = _harness("dataset", "score", "--labels", str(labels), "--predictions", str(predictions), "--json")
    assert done.returncode == 0, done.stderr
    subsets = json.loads(done.stdout)["subsets"]
    assert set(subsets) == {"all", "test"} and subsets["all"]["accuracy"] == 0.75
    assert subsets["all"]["f1_counts"] == pytest.approx(0.8)  # TP 2, FP 1, FN 0
    bad = _write(tmp_path / "bad.csv", "filename,label\na.png,2\n")
    with pytest.raises(UserError, match=r"bad\.csv line 2: label '2' for a\.png is not 1 \(person\) or 0"):
        score_labels(bad)


@pytest.mark.skipif(not CLEANED.is_file(), reason=f"needs the published cleaned labels {CLEANED} (../shared)")
def test_the_published_cleaned_validation_labels_score(tmp_path):
    dataset = score_labels(CLEANED)
    with open(CLEANED, newline="") as f:
        rows = list(csv.DictReader(f))
    depictions = {r["filename"] for r in rows if r["clean_label"] == "-2"}
    assert len(dataset.samples) == len({r["filename"] for r in rows}) and depictions
    wrong = {s.id for s in dataset.samples[:100]}  # the first hundred predicted wrong, the rest right
    predictions = _write(
        tmp_path / "p.csv",
        "filename,prediction\n"
        + "".join(f"{s.id},{1 - s.person if s.id in wrong else s.person}\n" for s in dataset.samples),
    )
    scored = score_file(dataset, predictions, [SUBSETS["all"]])["subsets"]["all"]
    assert scored["n"] == len(dataset.samples) and scored["accuracy"] == pytest.approx(1 - 100 / len(dataset.samples))
    assert scored["f1_wv"] is not None and scored["f1_counts"] is not None
    assert all(s.person == 0 for s in dataset.samples if s.id in depictions)
