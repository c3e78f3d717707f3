"""`harness stream run`: a WAV through the keyword pipeline on the board and on the host, compared and stored."""

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from harness.audio.clips import read_clip
from harness.audio.frontend import frontend_file
from harness.boards import Board
from harness.console import progress
from harness.device.launch import ConnectOptions, connect
from harness.device.qemu import emulated_instructions
from harness.errors import LinkError, UserError, setting
from harness.firmware.platformio import recorded_build
from harness.firmware.tflm_tree import TflmTree
from harness.link.registry import NATIVE_PROTOCOL
from harness.link.roles import KeywordStreaming
from harness.model.card import ModelCard
from harness.model.tasks import CARD_TASKS
from harness.model.tflite_file import TfliteModel, read_tflite
from harness.results.manifest import AudioProvenance, BoardProvenance, DeviceProvenance, Manifest, ModelProvenance
from harness.results.provenance import file_sha256, usb_serial_number
from harness.results.record import RunRecord, write_record
from harness.results.schema import to_json
from harness.results.store import new_run_id, results_root, run_folder
from harness.results.stream_scores import StreamScores
from harness.results.summary import Audio, Busy, SourcedBytes, StreamDetections, StreamSummary
from harness.streaming.detections import Detections, write_detections
from harness.streaming.ledger import Ledger, load_ledger
from harness.streaming.pipeline import TIMING_REFERENCE, HostStream, detections, keywords_of, stream_settings
from harness.streaming.policies import policy, policy_names
from harness.streaming.scoring import score_stream

CHUNK_MS = 100  # audio per STREAM_AUDIO request (less when the device's frames are smaller)


@dataclass(frozen=True)
class StreamRequest:
    card: ModelCard
    model: TfliteModel
    board: Board
    wav: Path
    results_root: Path
    port: str | None = None
    tflm: TflmTree | None = None
    serial: str | None = None  # the USB serial number, with several boards of a kind
    ledger: Path | None = None  # events to score the device's detections against
    ledger_unit: str | None = None
    tolerance_ms: int | None = None
    wakeword: str | None = None  # mlperf-sww: the wakeword (default: the card's first keyword)
    protocol: str = NATIVE_PROTOCOL  # the board's wire protocol (harness/link/registry.py)

    def stored_settings(self) -> dict:
        """What the run was asked for, as its manifest keeps it."""
        return {
            "board": self.board.id,
            "model": self.card.name,
            "wav": str(self.wav),
            "ledger": str(self.ledger) if self.ledger else None,
            "ledger_unit": self.ledger_unit,
            "tolerance_ms": self.tolerance_ms,
            "wakeword": self.wakeword,
            "port": self.port,
            "serial": self.serial,
            "tflm": str(self.tflm.root) if self.tflm else None,
        }


def read_stream_audio(wav: Path, sample_rate: int) -> np.ndarray:
    try:
        return read_clip(wav, sample_rate)
    except FileNotFoundError as exc:
        raise UserError(f"audio file {wav} does not exist; pass a 16-bit mono WAV") from exc
    except ValueError as exc:
        raise UserError(f"{wav}: {exc}; convert it (e.g. sox in.wav -r 16000 -c 1 -b 16 out.wav)") from exc


def _chunks(audio: np.ndarray, samples: int) -> list[bytes]:
    data = audio.astype("<i2")
    return [data[i : i + samples].tobytes() for i in range(0, len(data), samples)]


@dataclass
class StreamOutcome:
    record: StreamSummary
    run_dir: Path
    scores: dict  # policy -> score result, or why the ledger could not serve it, when a ledger was given

    @property
    def summary(self) -> dict:
        """The summary as written to summary.json, and where the run folder is."""
        return to_json(self.record) | {"run_dir": str(self.run_dir)}


def _rows_after(samples: int, settings) -> int:
    """The feature rows `samples` make: one per full window, a window every stride."""
    if samples < settings.window_samples:
        return 0
    return (samples - settings.window_samples) // settings.stride_samples + 1


@dataclass(frozen=True)
class StreamInputs:
    """The stream's audio and its ledger, read and checked from the card alone: a command reads them before it
    fetches a model or starts a board, so bad input is refused first (and offline)."""

    audio: np.ndarray
    duration_ms: int
    ledger: Ledger | None


def stream_inputs(
    card: ModelCard,
    wav: Path,
    ledger: Path | None = None,
    ledger_unit: str | None = None,
    tolerance_ms: int | None = None,
) -> StreamInputs:
    pre = card.preprocessing
    if CARD_TASKS[card.task].inputs != "audio":
        raise UserError(
            f"card {card.name} is an {card.task} card; streams are audio, so pass a keyword spotting card "
            f"to {setting('model')} (harness models lists them)"
        )
    audio = read_stream_audio(wav, pre.sample_rate)
    if len(audio) < pre.clip_samples:
        raise UserError(f"{wav} holds {len(audio)} samples, less than the model's {pre.clip_ms} ms window")
    duration_ms = 1000 * len(audio) // pre.sample_rate
    events = load_ledger(ledger, duration_ms, ledger_unit) if ledger else None
    if tolerance_ms is not None and tolerance_ms < 0:
        raise UserError(f"{setting('tolerance_ms')} must not be negative (got {tolerance_ms})")
    return StreamInputs(audio, duration_ms, events)


def run_stream(request: StreamRequest, inputs: StreamInputs | None = None) -> StreamOutcome:
    """The run; `inputs`: the request's audio and ledger when the caller has read them already (stream_inputs)."""
    card, model, board = request.card, request.model, request.board
    pre = card.preprocessing
    results_root(request.results_root)  # before the board runs: '', a file, a FIFO or a non-UTF-8 name refused
    inputs = inputs or stream_inputs(card, request.wav, request.ledger, request.ledger_unit, request.tolerance_ms)
    audio, duration_ms, ledger = inputs.audio, inputs.duration_ms, inputs.ledger
    front = frontend_file(card)
    settings = stream_settings(card, model, read_tflite(front))
    labels = card.output.labels
    started = datetime.now(UTC)
    device_raw, busy_ticks = [], 0
    options = ConnectOptions.named_by(
        request,
        tflm=request.tflm,
        frontend=front,
        roles=(KeywordStreaming,),
    )
    with connect(board, model, options) as client:
        frontend_arena = client.stream_start(settings.pack())
        chunk_samples = min(pre.sample_rate * CHUNK_MS // 1000, client.info.max_request_payload // 2)
        chunks = _chunks(audio, chunk_samples)
        sent = 0
        with progress(len(chunks), f"stream {board.id}", unit="chunks") as advance:
            for chunk in chunks:
                result = client.stream_audio(chunk)
                sent += len(chunk) // 2
                if result.rows_total != _rows_after(sent, settings):
                    raise LinkError(
                        f"{board.id} reports {result.rows_total} feature rows after {sent} samples, not "
                        f"{_rows_after(sent, settings)}: audio was fed twice or lost; run again"
                    )
                if result.found > len(result.detections):
                    raise UserError(f"{board.id} found more detections in one chunk than a frame holds")
                device_raw += result.detections
                busy_ticks += result.busy_ticks
                advance()
        info, rows, runs, link = client.info, result.rows_total, result.model_runs, vars(client.stats)
        firmware = client.firmware or recorded_build(info.build_id)
        board_serial = usb_serial_number(getattr(client.port, "port", None))
    with HostStream(model, front, settings) as host:
        host_raw = [d for chunk in chunks for d in host.push(chunk)]
    finished = datetime.now(UTC)
    device, host_found = detections(device_raw, labels), detections(host_raw, labels)
    # An emulator's virtual time is no latency: QEMU boards report the instructions they executed.
    instructions = emulated_instructions(busy_ticks, info.tick_hz, board)
    busy_seconds = busy_ticks / info.tick_hz if info.tick_hz and instructions is None else None
    run_id = new_run_id(card.name, board.id)
    scores = _scores(request, ledger, device, duration_ms) if ledger else {}
    summary = StreamSummary(
        run_id=run_id,
        model=card.name,
        model_caveat=card.caveat or None,
        board=board.id,
        audio=Audio(file=str(request.wav), duration_ms=duration_ms, sample_rate=pre.sample_rate),
        timing_reference=TIMING_REFERENCE,
        settings=asdict(settings),
        feature_rows=rows,
        model_runs=runs,
        detections=StreamDetections(device=device, host=host_found),
        device_equals_host=device == host_found,
        busy=Busy(
            source=board.latency_source,
            instructions=instructions,
            seconds=busy_seconds,
            real_time_factor=busy_seconds / (duration_ms / 1000) if busy_seconds and duration_ms else None,
        ),
        frontend_arena_used=SourcedBytes(source=board.latency_source, bytes=frontend_arena),
        link=link,
        scores=StreamScores.of(scores),
    )
    manifest = Manifest.new(
        run_id=run_id,
        kind="stream",
        started=started.isoformat(),
        finished=finished.isoformat(),
        settings=request.stored_settings(),
        model=ModelProvenance.of(card, model, frontend=str(front)),
        board=BoardProvenance.of(board, board_serial),
        device=DeviceProvenance.of(info, firmware, link),
        audio=AudioProvenance(
            file=str(request.wav),
            sha256=file_sha256(request.wav),
            ledger=str(request.ledger) if request.ledger else None,
            ledger_sha256=file_sha256(request.ledger) if request.ledger else None,
        ),
    )
    with run_folder(request.results_root, run_id) as folder:
        write_detections(folder.path / "detections_device.csv", device, follow_links=False)
        write_detections(folder.path / "detections_host.csv", host_found, follow_links=False)
        write_record(folder, RunRecord(manifest, summary))
    return StreamOutcome(summary, request.results_root / run_id, scores)


def _scores(request: StreamRequest, ledger, device: list, duration_ms: int) -> dict:
    """The device's detections under every policy (the host's are identical when the run is sound). A
    policy this ledger cannot serve (mlperf-sww without end times) gets the reason instead: the run
    itself is kept."""
    found = Detections(str(request.wav), TIMING_REFERENCE if device else None, tuple(device))
    wakeword = request.wakeword or keywords_of(request.card)[0]
    scores: dict = {}
    for name in policy_names():
        tolerance = request.tolerance_ms if policy(name).takes_tolerance else None
        try:
            scores[name] = score_stream(name, ledger, found, duration_ms, tolerance, wakeword)
        except UserError as exc:
            scores[name] = str(exc)
    return scores
