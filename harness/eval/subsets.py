"""The Wake Vision fine-grained benchmark subsets, defined over the label CSV's flag columns."""

from dataclasses import dataclass

from harness.errors import UserError
from harness.eval.dataset import Sample

PERSON, NON_PERSON = 1, 0


@dataclass(frozen=True)
class Subset:
    name: str
    flag: str | None  # CSV column; None selects every labelled image
    members_are: str  # "persons", "non_persons" or "both"
    positive_label: int  # the class F1 treats as positive (depiction subsets invert it, as the paper does)

    def label(self, sample: Sample) -> int:
        # Far-only rows carry person = -1; the Wake Vision reference keeps them in far, as persons.
        return PERSON if sample.person == -1 and self.flag == "far" else sample.person

    def contains(self, sample: Sample) -> bool:
        if self.flag is not None and sample.flags[self.flag] != 1:
            return False
        label = self.label(sample)
        if self.members_are == "persons":
            return label == PERSON
        if self.members_are == "non_persons":
            return label == NON_PERSON
        return label >= 0


SUBSETS = {
    s.name: s
    for s in (
        Subset("all", None, "both", PERSON),
        Subset("distance_near", "near", "persons", PERSON),
        Subset("distance_medium", "medium_distance", "persons", PERSON),
        Subset("distance_far", "far", "persons", PERSON),
        Subset("lighting_dark", "dark", "both", PERSON),
        Subset("lighting_normal", "normal_lighting", "both", PERSON),
        Subset("lighting_bright", "bright", "both", PERSON),
        Subset("miap_female", "predominantly_female", "persons", PERSON),
        Subset("miap_male", "predominantly_male", "persons", PERSON),
        Subset("miap_gender_unknown", "gender_unknown", "persons", PERSON),
        Subset("miap_young", "young", "persons", PERSON),
        Subset("miap_middle_age", "middle_age", "persons", PERSON),
        Subset("miap_older", "older", "persons", PERSON),
        Subset("miap_age_unknown", "age_unknown", "persons", PERSON),
        Subset("depiction_person", "person_depiction", "non_persons", NON_PERSON),
        Subset("depiction_non_person", "non-person_depiction", "non_persons", NON_PERSON),
        Subset("non_person_non_depiction", "non-person_non-depiction", "non_persons", NON_PERSON),
    )
}


def parse_subsets(spec: str) -> list[Subset]:
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in SUBSETS]
    if unknown or not names:
        raise UserError(f"unknown subset {', '.join(unknown) or repr(spec)}; valid subsets: {', '.join(SUBSETS)}")
    return [SUBSETS[name] for name in dict.fromkeys(names)]


def select_samples(samples, subsets: list[Subset], limit: int | None = None) -> list[Sample]:
    """Samples in any of the subsets, in dataset order, the first `limit` of them."""
    chosen = [s for s in samples if any(subset.contains(s) for subset in subsets)]
    return chosen[:limit] if limit is not None else chosen
