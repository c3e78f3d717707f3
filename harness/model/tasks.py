"""The tasks a model card may name (its `task`), and what each asks of the card: the one list of task names.
harness/eval/tasks.py registers one Task per name declared here and refuses any other."""

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class CardTask:
    name: str
    # What the card's preprocessing makes its inputs from, unless its pipeline reads ready-made files
    # (FILE_PIPELINES), which every task may: images, audio clips (and keyword streams), or files only.
    inputs: Literal["image", "audio", "files"]
    anomaly_score: bool = False  # its result is one anomaly score (output kind reconstruction_mse), and only its


CARD_TASKS = {
    task.name: task
    for task in (
        CardTask("image_classification", inputs="image"),  # person detection (Wake Vision)
        CardTask("keyword_spotting", inputs="audio"),
        CardTask("classification", inputs="files"),  # top-1 over the card's classes
        # a score per file over its windows, AUC and the MLPerf Tiny runner's Top-1
        CardTask("anomaly_detection", inputs="files", anomaly_score=True),
    )
}
