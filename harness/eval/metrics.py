"""Per-subset scores for device and host: accuracy with a Wilson interval, and two F1s, always named.

- f1_wv: the Wake Vision reference's rate-based F1, 2·TPR / (2·TPR + FPR + 1 - TPR), with TPR the
  accuracy on the subset's positives and FPR the error on its negative pool;
- f1_counts: the plain count-based F1, 2·TP / (2·TP + FP + FN), over the same positives and pool.
Both are given only over a whole pool: when every member of the subset's negative pool in the whole
dataset was evaluated, and the pool is not empty. Otherwise both are None and `f1_unavailable` says why:
the dataset has no negatives for the subset, or only "k of N" were evaluated (`pool_incomplete`; none, or
only those other subsets or --limit happened to bring in): an F1 over a partial pool depends on which
other subsets were asked for, not on the model. A dataset that holds only part of each pool and not its
size (hf: streamed without --pools) gives no F1 at all.
"""

import numpy as np

from harness.results.intervals import wilson_interval
from harness.results.summary import Score

UNKNOWN_POOL = "streamed from hf: without --pools; --pools streams each subset's whole pool"


# A subset's scores are stored in the run record as they are computed: one dataclass for both.
Scores = Score


def pool_size(subset, dataset_samples) -> int:
    """How many samples of the whole dataset are in the subset's F1 negative pool."""
    return sum(1 for s in dataset_samples if subset.is_negative(s))


def pool_of(subset, dataset) -> int | None:
    """The subset's pool size over the whole dataset, None where the dataset does not know it."""
    return pool_size(subset, dataset.samples) if dataset.whole_pools else None


def score(subset, samples, predictions, pool: int | None, left_out: str | None = None, members=None) -> Scores:
    """`predictions[i]` is 1 (person) or 0 for `samples[i]`; `pool` is the subset's negative-pool size
    over the whole dataset (`pool_of`), so a partly evaluated pool is recognised, or None where it is
    unknown (no F1); `left_out`: why the run did not evaluate the whole pool (harness/eval/sampling.py),
    said with an incomplete pool's F1. `members`: which samples the subset is scored on (its draw,
    `Selection.member_mask`; by default every member among `samples`) for n, accuracy and the positives;
    the pool's FP and TN count every sample."""
    predictions = np.asarray(predictions)
    members = np.asarray([subset.contains(s) for s in samples] if members is None else members, dtype=bool)
    labels = np.array([subset.label(s) for s in samples])
    positive = members & np.array([subset.is_positive(s) for s in samples], dtype=bool)
    negative = np.array([subset.is_negative(s) for s in samples], dtype=bool)
    said_positive = predictions == subset.positive_label
    tp, fn = int(np.sum(positive & said_positive)), int(np.sum(positive & ~said_positive))
    fp, tn = int(np.sum(negative & said_positive)), int(np.sum(negative & ~said_positive))
    n = int(members.sum())
    correct = int(np.sum(members & (predictions == labels)))
    tpr = tp / (tp + fn) if tp + fn else None
    fpr = fp / (fp + tn) if fp + tn else None
    negatives = fp + tn
    complete = negatives == pool
    unavailable = _whole_pool_missing(subset, pool, negatives, left_out)
    # The denominator is TPR + FPR + 1, never zero.
    rated = unavailable is None and subset.rate_f1 and tpr is not None and fpr is not None
    f1_wv = 2 * tpr / (2 * tpr + fpr + 1 - tpr) if rated else None
    f1_counts = 2 * tp / (2 * tp + fp + fn) if unavailable is None and (2 * tp + fp + fn) else None
    if unavailable is None and f1_counts is None:
        unavailable = "no positive sample and no false positive evaluated"
    accuracy = correct / n if n else None
    ci = wilson_interval(correct, n)
    return Scores(
        n=n,
        accuracy=accuracy,
        accuracy_ci95=ci,
        f1_wv=f1_wv,
        f1_counts=f1_counts,
        tp=tp,
        fn=fn,
        fp=fp,
        tn=tn,
        negatives=negatives,
        pool_size=pool,
        pool_incomplete=None if complete else f"{negatives} of {'unknown' if pool is None else pool}",
        f1_unavailable=unavailable,
    )


def _whole_pool_missing(subset, pool: int | None, negatives: int, left_out: str | None) -> str | None:
    if subset.positive_label is None:
        return "no positive class: F1 is given per class"
    if pool is None:
        return UNKNOWN_POOL
    if pool == 0:
        return "the dataset has no negatives for this subset (its F1 pool is empty)"
    if negatives < pool:
        why = f" ({left_out})" if left_out else ""
        return f"only {negatives} of the {pool} samples of its negative pool evaluated{why}"
    return None
