"""What an eval run's task declares about its figures, kept in the run's summary (EvalSummary.task_facts) so
that results, which sits below eval, reads the facts rather than testing the task's name. Each task of
harness/eval/tasks.py declares its own; runs of earlier versions, which stored only the task's name, read
theirs from EARLIER_TASKS."""

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class TaskFacts:
    decides_samples: bool  # each sample gets a class: accuracy and F1 per subset, the sample checks' classes
    wake_vision: bool = False  # Wake Vision's fine-grained subsets, person or not (two classes), and F1wv


# The tasks of the versions that stored no facts (a new task writes its own and is never added here).
EARLIER_TASKS = {
    "image_classification": TaskFacts(decides_samples=True, wake_vision=True),
    "keyword_spotting": TaskFacts(decides_samples=True),
    "classification": TaskFacts(decides_samples=True),
    "anomaly_detection": TaskFacts(decides_samples=False),
}
