"""One comparison of two eval runs: the record `harness runs compare` prints, its --json writes and the report's
cross-run view shows (harness/results/compare.py computes it once), and the pairing of the runs' accuracies.

A subset's figures are over its paired samples only, the ones both runs scored in it: both accuracies with their
Wilson 95 % intervals, their difference and McNemar's exact test on the paired device predictions."""

from dataclasses import asdict, dataclass

import numpy as np

from harness.errors import UserError
from harness.results.intervals import wilson_interval
from harness.results.summary import EvalSummary

ALPHA = 0.05


def mcnemar_exact(a_correct: np.ndarray, b_correct: np.ndarray) -> tuple[int, int, float]:
    """Discordant pairs (only A right, only B right) and the exact two-sided McNemar p-value."""
    only_a = int(np.sum(a_correct & ~b_correct))
    only_b = int(np.sum(~a_correct & b_correct))
    if only_a + only_b == 0:
        return only_a, only_b, 1.0
    from scipy.stats import binomtest  # here: scipy.stats takes half a second to import, and only this test needs it

    return only_a, only_b, float(binomtest(only_a, only_a + only_b, 0.5).pvalue)


@dataclass(frozen=True, kw_only=True)
class PairedSubset:
    """A subset's device accuracy in A and in B over the samples both runs scored in it."""

    n_paired: int
    accuracy_a: float | None
    accuracy_b: float | None
    accuracy_ci95_a: tuple[float, float] | None  # Wilson 95 %
    accuracy_ci95_b: tuple[float, float] | None
    delta: float | None  # B - A
    only_a_correct: int
    only_b_correct: int
    mcnemar_p: float
    significant: bool

    @classmethod
    def of(cls, a_ok: np.ndarray, b_ok: np.ndarray) -> "PairedSubset":
        """From each paired sample's correctness in A and in B."""
        n = len(a_ok)
        only_a, only_b, p = mcnemar_exact(a_ok, b_ok)
        return cls(
            n_paired=n,
            accuracy_a=float(a_ok.mean()) if n else None,
            accuracy_b=float(b_ok.mean()) if n else None,
            accuracy_ci95_a=wilson_interval(int(a_ok.sum()), n),
            accuracy_ci95_b=wilson_interval(int(b_ok.sum()), n),
            delta=float(b_ok.mean() - a_ok.mean()) if n else None,
            only_a_correct=only_a,
            only_b_correct=only_b,
            mcnemar_p=p,
            significant=p < ALPHA,
        )


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """What changed from run A to run B, and whether it is more than chance."""

    run_a: str
    run_b: str
    paired_samples: int
    prediction_flips: int
    subsets: dict[str, PairedSubset]  # every subset both runs score, a subset without paired samples too
    apart: str | None  # why no accuracy is compared (no subset with paired samples in common), in one line
    anomaly: dict | None
    latency: dict
    arena: dict
    significant: bool

    @property
    def compared(self) -> dict[str, PairedSubset]:
        """The subsets with paired samples: the ones with figures to show."""
        return {name: subset for name, subset in self.subsets.items() if subset.n_paired}

    def as_json(self) -> dict:
        """The record as `harness runs compare --json` writes it."""
        data = asdict(self)
        return data | {"arena_used_delta": self.arena["used_delta"]}


@dataclass(frozen=True)
class PairedAccuracy:
    """The runs' samples paired by id, and each subset's accuracies on them."""

    samples: int
    prediction_flips: int
    subsets: dict[str, PairedSubset]
    apart: str | None


def _column(run, name: str, rows: list[int]) -> np.ndarray:
    values = run.samples[name]
    return np.array([values[row] for row in rows])


def pair_accuracy(a, b, summary_a: EvalSummary, summary_b: EvalSummary) -> PairedAccuracy:
    """`a` and `b` need only id and samples. A subset's paired samples are those both runs scored in it (its
    membership column in each); runs that share no sample are refused in one line."""
    b_index = {sid: i for i, sid in enumerate(b.samples["sample_id"])}
    a_rows, b_rows = [], []
    for row, sid in enumerate(a.samples["sample_id"]):
        if sid in b_index:
            a_rows.append(row)
            b_rows.append(b_index[sid])
    if not a_rows:
        raise UserError(f"runs {a.id} and {b.id} share no samples; compare runs on the same dataset")
    labels = _column(a, "label", a_rows)
    labels = np.where(labels == -1, 1, labels)
    a_pred, b_pred = _column(a, "device_prediction", a_rows), _column(b, "device_prediction", b_rows)
    decided = summary_a.anomaly is None and summary_b.anomaly is None  # anomaly windows get no class
    subsets = {}
    for name in summary_a.subsets if decided else ():
        column = f"in_{name}"
        if name not in summary_b.subsets or column not in a.samples:
            continue
        members = _column(a, column, a_rows).astype(bool)
        if column in b.samples:
            members &= _column(b, column, b_rows).astype(bool)
        subsets[name] = PairedSubset.of((a_pred == labels)[members], (b_pred == labels)[members])
    apart = _apart(a.id, b.id, summary_a, summary_b, subsets) if decided else None
    return PairedAccuracy(len(a_rows), int(np.sum(a_pred != b_pred)), subsets, apart)


def _apart(a_id: str, b_id: str, summary_a: EvalSummary, summary_b: EvalSummary, subsets: dict) -> str | None:
    if any(subset.n_paired for subset in subsets.values()):
        return None
    if not any(name in summary_b.subsets for name in summary_a.subsets):
        return (
            f"no subset in common ({a_id}: {', '.join(summary_a.subsets) or 'none'}; "
            f"{b_id}: {', '.join(summary_b.subsets) or 'none'}): no accuracy to compare"
        )
    common = [name for name in summary_a.subsets if name in summary_b.subsets]
    return f"no sample scored in {', '.join(common)} by both runs: no accuracy to compare"
