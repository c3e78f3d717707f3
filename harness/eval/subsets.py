"""The Wake Vision fine-grained benchmark subsets, defined as the reference evaluator defines them.

Each subset has members (the images its accuracy is measured on) and, for F1, a positive class and
a negative pool (../shared/reference/wake_vision_kws_lpirc_domain.md, section 1.3):
- distance, perceived gender and age: members are the images with the flag (persons, in the
  published flags); the negatives are all non-person images;
- lighting: members are all images with the flag; positives its persons, negatives its non-persons;
- depiction (inverted): members are the images with the flag (non-persons, in the published flags)
  and non-person is the positive class; the negatives are all person images;
- test, validation, all: every labelled image of that split (or of the loaded splits).
Rows with person = -1 (far-only images) count as persons in distance_far and are dropped elsewhere.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from harness.errors import UserError
from harness.model.card import ModelCard
from harness.samples import Sample

if TYPE_CHECKING:
    from harness.results.runs import Run

PERSON, NON_PERSON = 1, 0


@dataclass(frozen=True)
class Subset:
    name: str
    flag: str | None  # CSV column; None selects every labelled image
    family: str  # "all", "distance", "miap", "lighting" or "depiction"
    split: str | None = None  # only images of this split (the test and validation subsets)
    rate_f1: ClassVar[bool] = True  # Wake Vision's rate-based F1 (f1_wv) applies

    @property
    def positive_label(self) -> int:
        return NON_PERSON if self.family == "depiction" else PERSON

    def label(self, sample: Sample) -> int:
        return PERSON if sample.person == -1 and self.flag == "far" else sample.person

    def contains(self, sample: Sample) -> bool:
        """Members by flag alone, as the reference selects them (harvard-edge/Wake_Vision_Quickstart d477361,
        benchmark.py lines 54-56, 81-93, 132-134: `x[flag] == 1`; pp_ops.py lines 102-103 then drops
        person = -1 rows except in the far set). A member whose person label contradicts its flag
        (`contradicts`) stays a member with its own label."""
        if self.split is not None and sample.split != self.split:
            return False
        if self.flag is not None and sample.flags[self.flag] != 1:
            return False
        return self.label(sample) >= 0

    def contradicts(self, sample: Sample) -> bool:
        """A distance or MIAP member labelled non-person, or a depiction member labelled person."""
        return self.family in ("distance", "miap", "depiction") and (
            self.contains(sample) and self.label(sample) != self.positive_label
        )

    def is_positive(self, sample: Sample) -> bool:
        return self.contains(sample) and self.label(sample) == self.positive_label

    def is_negative(self, sample: Sample) -> bool:
        """In the negative pool F1 compares against."""
        if self.family in ("all", "lighting"):
            return self.contains(sample) and self.label(sample) != self.positive_label
        if self.family == "depiction":
            return sample.person == PERSON
        return sample.person == NON_PERSON


def flag_contradictions(samples, subsets) -> int:
    """How many samples are members of one of the subsets against their person label."""
    flagged = [sub for sub in subsets if isinstance(sub, Subset)]
    return sum(1 for s in samples if any(sub.contradicts(s) for sub in flagged))


def label_notes(dataset, subsets) -> tuple[list[str], int]:
    """What a run says once about its labels: what cleaned labels changed, and how many members of the
    subsets have flags that contradict their person label (both are kept in the run's manifest)."""
    notes = []
    clean = dataset.clean_labels
    if clean is not None:
        notes.append(
            f"clean labels from {', '.join(clean.files)} changed {clean.changed} person labels "
            f"({clean.depictions} verified depictions are non-persons, {clean.excluded} rows excluded, "
            f"{clean.not_listed} rows not listed keep their own)"
        )
    count = flag_contradictions(dataset.samples, subsets)
    if count:
        notes.append(
            f"warning: {count} members of {', '.join(s.name for s in subsets)} have flags that contradict "
            "their person label (e.g. far on a non-person, a depiction flag on a person); they are selected by "
            "flag, as the reference evaluator does, and scored with their own label"
        )
    return notes, count


SUBSETS = {
    s.name: s
    for s in (
        Subset("all", None, "all"),
        Subset("test", None, "all", split="test"),
        Subset("validation", None, "all", split="validation"),
        Subset("distance_near", "near", "distance"),
        Subset("distance_medium", "medium_distance", "distance"),
        Subset("distance_far", "far", "distance"),
        Subset("lighting_dark", "dark", "lighting"),
        Subset("lighting_normal", "normal_lighting", "lighting"),
        Subset("lighting_bright", "bright", "lighting"),
        Subset("depiction_person", "person_depiction", "depiction"),
        Subset("depiction_non_person", "non-person_depiction", "depiction"),
        Subset("depiction_none", "non-person_non-depiction", "depiction"),
        Subset("gender_female", "predominantly_female", "miap"),
        Subset("gender_male", "predominantly_male", "miap"),
        Subset("gender_unknown", "gender_unknown", "miap"),
        Subset("age_young", "young", "miap"),
        Subset("age_middle", "middle_age", "miap"),
        Subset("age_older", "older", "miap"),
        Subset("age_unknown", "age_unknown", "miap"),
    )
}


def parse_subsets(spec: str) -> list[Subset]:
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in SUBSETS]
    if unknown or not names:
        raise UserError(f"unknown subset {', '.join(unknown) or repr(spec)}; valid subsets: {', '.join(SUBSETS)}")
    return [SUBSETS[name] for name in dict.fromkeys(names)]


# Multi-class tasks (keyword spotting, classification): `all`, or one class by its label.
@dataclass(frozen=True)
class ClassSubset:
    """`all`, or one class: its samples are the members (accuracy there is the class's recall), the
    samples of every other class its negatives (for precision and F1)."""

    name: str
    index: int | None
    family: str = "class"
    split: str | None = None
    rate_f1: ClassVar[bool] = False  # f1_wv is Wake Vision's; classes report f1_counts

    @property
    def positive_label(self) -> int | None:
        return self.index

    def label(self, sample: Sample) -> int:
        return sample.flags["label"]

    def contains(self, sample: Sample) -> bool:
        return self.index is None or sample.flags["label"] == self.index

    def is_positive(self, sample: Sample) -> bool:
        return self.index is not None and self.contains(sample)

    def is_negative(self, sample: Sample) -> bool:
        return self.index is not None and not self.contains(sample)


def class_subsets(spec: str, card: ModelCard) -> list[ClassSubset]:
    available = {"all": ClassSubset("all", None)} | {
        label: ClassSubset(label, i) for i, label in enumerate(card.output.labels)
    }
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in available]
    if unknown or not names:
        raise UserError(
            f"unknown subset {', '.join(unknown) or repr(spec)} for {card.name}; valid: {', '.join(available)}"
        )
    return [available[name] for name in dict.fromkeys(names)]


def gate_subsets(run: "Run") -> list[str]:
    """The subsets a [gate.SUBSET] table may name for a run (harness runs check): Wake Vision's for person
    detection, `all` and the card's class labels for multi-class cards (the run's confusion matrix keeps
    them), and any the run itself holds (an earlier version's); none for a stream run."""
    if run.kind != "eval":
        return []
    summary = run.eval_summary
    if summary.facts.wake_vision:
        names = list(SUBSETS)
    else:
        names = ["all", *(summary.confusion.labels if summary.confusion else [])]
    return list(dict.fromkeys([*names, *summary.subsets]))


def judge_gates(run: "Run", gates: dict, baseline: "Run | None" = None, strict: bool = False) -> list:
    """Every gate's GateResult as `harness runs check`, `harness runs report --gates` and the API give it: with
    the subsets the run's task has."""
    from harness.results.gates import check_gates

    return check_gates(run, gates, baseline, strict, subsets=gate_subsets(run))
