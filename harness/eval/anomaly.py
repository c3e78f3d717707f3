"""Anomaly detection scored as the MLPerf Tiny runner scores ad01 (benchmark/runner/main.py,
summarize_result and calculate_accuracy at mlcommons/tiny 1afd2c9820f795965a6134facd0b4dfae41ef23f):

- a file's score is the mean of its windows' scores (the values the DUT printed);
- AUC over files, anomaly (class 1) the positive class: the Mann-Whitney U statistic over n1·n0, which is
  sklearn's roc_auc_score, ties counted as one half;
- Top-1 %: the best, over 100 thresholds min + k/100·(max - min) (k = 0..99) of the file scores, of
  100·(precision + recall)/2 with a file called anomalous when its score is above the threshold, each
  ratio's denominator plus 1e-8 as the runner adds it.
"""

from collections import Counter, defaultdict

import numpy as np

from harness.eval.runner_files import file_of
from harness.results.summary import AnomalyScore
from harness.samples import Sample

EPSILON = 1e-8  # the runner's guard against a zero denominator
THRESHOLD_STEP = 0.01  # the runner's np.arange(0.0, 1.0, .01): 100 thresholds


def file_scores(samples: list[Sample], scores) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(files in first-seen order, their labels, the mean of their windows' scores, each the printed
    three-decimal value as the runner parses it)."""
    windows: dict[str, list[float]] = defaultdict(list)
    labels: dict[str, int] = {}
    for sample, value in zip(samples, scores, strict=True):
        name = file_of(sample)
        windows[name].append(float(f"{float(value):.3f}"))
        labels[name] = sample.label
    files = list(windows)
    return files, np.array([labels[f] for f in files]), np.array([np.mean(windows[f]) for f in files])


def windows_per_file(samples: list[Sample]) -> Counter:
    """How many windows each file of a dataset has."""
    return Counter(file_of(sample) for sample in samples)


def auc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """Area under the ROC curve, anomaly positive; None without both classes."""
    anomalous, normal = scores[labels == 1], scores[labels == 0]
    if not len(anomalous) or not len(normal):
        return None
    from scipy.stats import mannwhitneyu  # here: importing scipy.stats is most of an eval start-up

    return float(mannwhitneyu(anomalous, normal).statistic / (len(anomalous) * len(normal)))


def top1(labels: np.ndarray, scores: np.ndarray) -> float:
    """The runner's "Top 1%": its best mean of precision and recall over its thresholds, in percent."""
    low, high = float(np.amin(scores)), float(np.amax(scores))
    best = 0.0
    for threshold in low + np.arange(0.0, 1.0, THRESHOLD_STEP) * (high - low):
        said = scores > threshold
        tp = np.sum(said & (labels == 1))
        fp = np.sum(said & (labels == 0))
        fn = np.sum(~said & (labels == 1))
        precision = tp / (tp + fp + EPSILON)
        recall = tp / (tp + fn + EPSILON)
        best = max(best, 100 * (precision + recall) / 2)
    return float(best)


def anomaly_score(samples: list[Sample], scores, dataset_windows: Counter | None = None) -> AnomalyScore:
    """Files, AUC and Top-1 of one source's window scores, over the files whose every window (of
    `dataset_windows`) was evaluated: a file's score is the mean of all its windows, as the runner's."""
    evaluated = Counter(file_of(sample) for sample in samples)
    whole = {f for f, n in evaluated.items() if dataset_windows is None or n == dataset_windows[f]}
    kept = [i for i, sample in enumerate(samples) if file_of(sample) in whole]
    _, labels, per_file = file_scores([samples[i] for i in kept], [scores[i] for i in kept])
    return AnomalyScore(
        files=len(per_file),
        anomalous_files=int(np.sum(labels == 1)),
        windows=len(kept),
        partial_files=len(evaluated) - len(whole),
        auc=auc(labels, per_file),
        top1_percent=top1(labels, per_file) if len(set(labels.tolist())) == 2 else None,  # as AUC: both classes
    )
