"""Per-subset scores for device and host: accuracy with a Wilson interval, and two F1s, always named.

- f1_wv: the Wake Vision reference's rate-based F1, 2·TPR / (2·TPR + FPR + 1 - TPR), with TPR the
  accuracy on the subset's positives and FPR the error on its negative pool;
- f1_counts: the plain count-based F1, 2·TP / (2·TP + FP + FN), over the same positives and pool.
Both need the negative pool evaluated (`harness eval --pools`); without it f1_wv is None and
f1_counts counts no false positives.
"""

import math
from dataclasses import asdict, dataclass

import numpy as np

Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    if n == 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Scores:
    n: int
    accuracy: float | None
    accuracy_ci95: tuple[float, float] | None
    f1_wv: float | None
    f1_counts: float | None
    tp: int
    fn: int
    fp: int
    tn: int
    negatives: int  # evaluated members of the negative pool

    def as_dict(self) -> dict:
        return asdict(self)


def score(subset, samples, predictions) -> Scores:
    """`predictions[i]` is 1 (person) or 0 for `samples[i]`."""
    predictions = np.asarray(predictions)
    members = np.array([subset.contains(s) for s in samples], dtype=bool)
    labels = np.array([subset.label(s) for s in samples])
    positive = np.array([subset.is_positive(s) for s in samples], dtype=bool)
    negative = np.array([subset.is_negative(s) for s in samples], dtype=bool)
    said_positive = predictions == subset.positive_label
    tp, fn = int(np.sum(positive & said_positive)), int(np.sum(positive & ~said_positive))
    fp, tn = int(np.sum(negative & said_positive)), int(np.sum(negative & ~said_positive))
    n = int(members.sum())
    correct = int(np.sum(members & (predictions == labels)))
    tpr = tp / (tp + fn) if tp + fn else None
    fpr = fp / (fp + tn) if fp + tn else None
    # The denominator is TPR + FPR + 1, never zero.
    rated = subset.rate_f1 and tpr is not None and fpr is not None
    f1_wv = 2 * tpr / (2 * tpr + fpr + 1 - tpr) if rated else None
    f1_counts = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else None
    return Scores(n, correct / n if n else None, wilson_interval(correct, n), f1_wv, f1_counts, tp, fn, fp, tn, fp + tn)
