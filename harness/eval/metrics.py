"""Per-subset scores: accuracy and count-based F1, device against host."""

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Scores:
    n: int
    accuracy: float | None
    f1: float | None
    tp: int
    fp: int
    fn: int
    tn: int

    def as_dict(self) -> dict:
        return asdict(self)


def score(labels: np.ndarray, predictions: np.ndarray, positive_label: int) -> Scores:
    """F1 from counts over the given samples: 2TP / (2TP + FP + FN), positive class as stated.

    Wake Vision's own code computes F1 from rates against shared negative pools; this is the
    count-based F1 of exactly the samples evaluated.
    """
    labels = np.asarray(labels)
    predictions = np.asarray(predictions)
    is_pos, said_pos = labels == positive_label, predictions == positive_label
    tp = int(np.sum(is_pos & said_pos))
    fp = int(np.sum(~is_pos & said_pos))
    fn = int(np.sum(is_pos & ~said_pos))
    tn = int(np.sum(~is_pos & ~said_pos))
    n = len(labels)
    accuracy = (tp + tn) / n if n else None
    f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else None
    return Scores(n, accuracy, f1, tp, fp, fn, tn)
