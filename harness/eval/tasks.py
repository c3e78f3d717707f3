"""What differs between a card's tasks in an eval: where samples come from, which subsets exist,
how a file becomes an input tensor, and how an output is read. Each task is one implementation of `Task`,
registered under the card task it serves (`register`); `task_for` finds a card's."""

from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar, runtime_checkable

from harness.errors import UserError, setting
from harness.eval.dataset import load_dataset, require_flags
from harness.eval.inputs import image_preparation
from harness.eval.outputs import NO_DECISION, predict, predict_class, score_of
from harness.eval.runner_files import load_runner_dataset, runner_file_preparation
from harness.eval.subsets import PERSON, class_subsets, parse_subsets
from harness.model.card import ModelCard
from harness.model.tasks import CARD_TASKS
from harness.results.task_facts import TaskFacts
from harness.samples import Dataset, Preparation
from harness.tensors import TensorSpec


def refuse_clean_labels(card: ModelCard, clean_labels: str | None) -> None:
    if clean_labels is not None:
        raise UserError(
            f"{setting('clean_labels')} is for Wake Vision's labels; {card.name} is a {card.task} card: drop it"
        )


@dataclass(frozen=True)
class DatasetRequest:
    """Which dataset a run reads, and what a streamed source (hf:) must bring of it."""

    spec: str
    subsets: list
    splits: list[str] | None = None
    limit: int | None = None  # members per subset
    clean_labels: str | None = None
    pools: bool = False  # hf: streams each subset's whole F1 pool
    seed: int = 0  # hf: the shuffled stream's seed (with a limit and no pools)


@runtime_checkable
class Task(Protocol):
    """One card task in an eval. `facts` go into the run's summary, where results reads them."""

    name: ClassVar[str]  # the card's `task` it serves, one declared in harness/model/tasks.py CARD_TASKS
    facts: ClassVar[TaskFacts]
    confusion: ClassVar[bool]  # the summary keeps a confusion matrix over the card's labels
    scores_files: ClassVar[bool]  # AUC and Top-1 over files of windows (harness/eval/anomaly.py)
    card: ModelCard

    def load_dataset(self, wanted: DatasetRequest) -> Dataset: ...

    def subsets(self, spec: str) -> list: ...

    def preparation(self, spec: TensorSpec) -> Preparation: ...

    def predict(self, raw: bytes, spec: TensorSpec) -> tuple[int, float]:
        """(class, score) of one output; NO_DECISION as the class where the task decides none."""
        ...

    def class_name(self, subset) -> str: ...


TASKS: dict[str, type[Task]] = {}
T = TypeVar("T", bound=type)


def register(task: T) -> T:
    """A task class, registered under its `name` (used as a class decorator): a task a card may name."""
    if task.name not in CARD_TASKS:
        raise ValueError(f"task {task.name!r} is not a card task; declare it in harness/model/tasks.py CARD_TASKS")
    if task.name in TASKS:
        raise ValueError(f"task {task.name!r} is registered twice")
    TASKS[task.name] = task
    return task


@register
@dataclass(frozen=True)
class ImageClassification:
    """Image classification as Wake Vision scores it: images in its layout (or streamed from it), its
    fine-grained subsets, person (1) or not (0), F1 and its rate F1 (F1wv)."""

    name: ClassVar[str] = "image_classification"
    facts: ClassVar[TaskFacts] = TaskFacts(decides_samples=True, wake_vision=True)
    confusion: ClassVar[bool] = False  # two classes: the F1 columns say it all
    scores_files: ClassVar[bool] = False
    card: ModelCard

    def load_dataset(self, wanted: "DatasetRequest") -> Dataset:
        spec, splits = wanted.spec, wanted.splits
        if spec.startswith("hf:"):  # streamed into a folder in the published layout first
            from harness.eval.hf_source import stream_to_folder

            splits = splits or ["test"]
            spec = str(stream_to_folder(spec, splits, wanted.subsets, wanted.limit, wanted.pools, wanted.seed))
        dataset = load_dataset(spec, splits, wanted.clean_labels)
        require_flags(dataset, wanted.subsets)
        return dataset

    def subsets(self, spec: str) -> list:
        return parse_subsets(spec)

    def preparation(self, spec: TensorSpec) -> Preparation:
        return image_preparation(self.card.preprocessing, spec)

    def predict(self, raw: bytes, spec: TensorSpec) -> tuple[int, float]:
        return predict(raw, spec, self.card.output)

    def class_name(self, subset) -> str:
        return "person" if subset.positive_label == PERSON else "non-person"


@register
@dataclass(frozen=True)
class Classification:
    """Top-1 over the card's classes, on the MLPerf Tiny runner's files (kws01, ic01): a subset per class."""

    name: ClassVar[str] = "classification"
    facts: ClassVar[TaskFacts] = TaskFacts(decides_samples=True)
    confusion: ClassVar[bool] = True
    scores_files: ClassVar[bool] = False
    card: ModelCard

    def load_dataset(self, wanted: "DatasetRequest") -> Dataset:
        refuse_clean_labels(self.card, wanted.clean_labels)
        return load_runner_dataset(wanted.spec, self.card, windows=self.scores_files)

    def subsets(self, spec: str) -> list:
        return class_subsets(spec, self.card)

    def preparation(self, spec: TensorSpec) -> Preparation:
        return runner_file_preparation(self.card.eembc, spec)

    def predict(self, raw: bytes, spec: TensorSpec) -> tuple[int, float]:
        return predict_class(raw, spec, self.card.output)

    def class_name(self, subset) -> str:
        return "every class" if subset.index is None else self.card.output.labels[subset.index]


@register
@dataclass(frozen=True)
class KeywordSpotting(Classification):
    """Speech Commands style: 1 s clips through the card's frontend, a subset per class, the top class."""

    name: ClassVar[str] = "keyword_spotting"

    def load_dataset(self, wanted: "DatasetRequest") -> Dataset:
        from harness.audio.dataset import load_keyword_dataset

        refuse_clean_labels(self.card, wanted.clean_labels)
        return load_keyword_dataset(wanted.spec, self.card)

    def preparation(self, spec: TensorSpec) -> Preparation:
        from harness.audio.frontend import keyword_preparation

        return keyword_preparation(self.card, spec)


@register
@dataclass(frozen=True)
class AnomalyDetection(Classification):
    """MLPerf Tiny ad01: the runner's spectrogram files in windows, one anomaly score a window (the DUT's
    reconstruction error), scored per file over its windows (harness/eval/anomaly.py): AUC and Top-1.
    The benchmark sets no threshold, so no window is called normal or anomalous (NO_DECISION): the
    per-subset table compares the scores of device and host, not accuracies."""

    name: ClassVar[str] = "anomaly_detection"
    facts: ClassVar[TaskFacts] = TaskFacts(decides_samples=False)
    confusion: ClassVar[bool] = False
    scores_files: ClassVar[bool] = True

    def predict(self, raw: bytes, spec: TensorSpec) -> tuple[int, float]:
        return NO_DECISION, score_of(raw, spec)


def task_for(card: ModelCard) -> Task:
    return TASKS[card.task](card)
