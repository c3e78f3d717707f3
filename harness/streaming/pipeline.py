"""The keyword streaming pipeline's settings, and its host reference.

The pipeline itself is C (firmware/core/hp_stream.c): the device runs it, and the host reference
runs the very same code through the device core library, with the TFLM host interpreter behind
the frontend and the model. Detections are timed at the decision: the end of the audio window
whose model result completed the average that cleared the threshold.
"""

import struct
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.errors import UserError
from harness.model.card import ModelCard
from harness.model.tasks import CARD_TASKS
from harness.model.tflite_file import TfliteModel, read_tflite
from harness.native import Detection as NativeDetection
from harness.native import device_core
from harness.results.stream_scores import Detection

TIMING_REFERENCE = "decision"  # the end of the window whose result decided; see docs/streaming.md
# Detection scores are the recognizer's averages on 0..255: int8 score + 128, uint8, or probability x 255.
MAX_DETECTIONS_PER_PUSH = 64
SCORE_TYPES = (1, 3, 9)  # TfLiteType float32, uint8, int8


@dataclass(frozen=True)
class StreamSettings:
    """hp_stream_config, field for field."""

    sample_rate: int
    window_samples: int
    stride_samples: int
    frames: int
    row_bytes: int
    model_every: int
    classes: int
    average_ms: int
    min_count: int
    suppression_ms: int
    keyword_mask: int
    threshold: int

    def pack(self) -> bytes:
        return struct.pack("<12I", *asdict(self).values())


def keywords_of(card: ModelCard) -> list[str]:
    """The classes a detection can name: [streaming] keywords, else every class but silence and unknown."""
    return list((card.streaming or {}).get("keywords") or []) or [
        label for label in card.output.labels if label not in (card.output.silence_label, card.output.unknown_label)
    ]


def stream_settings(card: ModelCard, model: TfliteModel, frontend: TfliteModel) -> StreamSettings:
    """From the card's [preprocessing] and [streaming] tables and the two models' tensors."""
    if CARD_TASKS[card.task].inputs != "audio" or not card.streaming:
        raise UserError(f"model {card.name} has no [streaming] table; streaming needs a keyword card with one")
    if model.output.dtype not in SCORE_TYPES:
        raise UserError(
            f"{model.path.name} outputs {model.output.describe()}; the recognizer reads int8, uint8 or float32 scores"
        )
    if model.output.dtype == SCORE_TYPES[0] and card.output.kind != "softmax":
        raise UserError(
            f"{card.card_path}: the recognizer reads float32 outputs as probabilities; this card's are "
            f"{card.output.kind}: stream a model with a softmax output"
        )
    pre, streaming, labels = card.preprocessing, card.streaming, card.output.labels
    keywords = keywords_of(card)
    unknown = [k for k in keywords if k not in labels]
    if unknown:
        raise UserError(f"{card.card_path}: [streaming] keywords {', '.join(unknown)} are not among {labels}")
    try:
        return StreamSettings(
            sample_rate=pre.sample_rate,
            window_samples=pre.window_samples,
            stride_samples=pre.stride_samples,
            frames=pre.frames,
            row_bytes=frontend.output.bytes,
            model_every=int(streaming.get("model_every", 1)),
            classes=len(labels),
            average_ms=int(streaming["average_ms"]),
            min_count=int(streaming["min_count"]),
            suppression_ms=int(streaming["suppression_ms"]),
            keyword_mask=sum(1 << labels.index(k) for k in keywords),
            threshold=int(streaming["threshold"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        needed = "average_ms, min_count, suppression_ms and threshold"
        raise UserError(f"{card.card_path}: [streaming] needs {needed} (whole numbers)") from exc


def streaming_frontend(card: ModelCard) -> TfliteModel | None:
    """The audio frontend firmware embeds for keyword streaming: cards with [streaming] and [frontend]."""
    if CARD_TASKS[card.task].inputs != "audio" or not card.streaming or not card.preprocessing.frontend:
        return None
    from harness.audio.frontend import frontend_file

    return read_tflite(frontend_file(card))


def detections(raw: list[tuple[int, int, int]], labels: tuple[str, ...]) -> list[Detection]:
    return [Detection(labels[label], time_ms, float(score), TIMING_REFERENCE) for label, score, time_ms in raw]


class HostStream:
    """The device's streaming pipeline run on this machine (the reference a device run is held to)."""

    def __init__(self, model: TfliteModel, frontend_path: Path, settings: StreamSettings):
        from harness.device.sim_board import FRONTEND_ARENA_BYTES, NativeRunner, TflmRunner
        from harness.model.references import HOST_ARENA_BYTES

        self._lib = device_core()
        self._runners = [
            NativeRunner(TflmRunner(read_tflite(frontend_path).data, FRONTEND_ARENA_BYTES, fresh_on_setup=True)),
            NativeRunner(TflmRunner(model.data, HOST_ARENA_BYTES)),
        ]
        self._stream = self._lib.sim_stream_create()
        problem = self._lib.sim_stream_start(self._stream, settings.pack(), *(r.handle for r in self._runners))
        if problem:
            self.close()
            raise UserError(f"the host reference cannot stream this model: {problem.decode()}")

    def push(self, samples: bytes) -> list[tuple[int, int, int]]:
        """(class, score, time_ms) for each detection the samples complete."""
        found = (NativeDetection * MAX_DETECTIONS_PER_PUSH)()
        count = self._lib.hp_stream_push(self._stream, samples, len(samples) // 2, found, MAX_DETECTIONS_PER_PUSH)
        if count < 0:
            raise RuntimeError("the host reference's frontend or model failed")
        return [(d.label, d.score, d.time_ms) for d in found[: min(count, MAX_DETECTIONS_PER_PUSH)]]

    def close(self) -> None:
        if self._stream:
            self._lib.sim_stream_destroy(self._stream)
            self._stream = None
        for runner in self._runners:
            runner.close()

    def __enter__(self) -> "HostStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
