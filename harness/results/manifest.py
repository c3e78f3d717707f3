"""The run manifest (manifest.json): where a run's figures come from — harness, host, board, firmware, model,
data, settings. Written and read with the summary by harness/results/record.py."""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.results.provenance import harness_source, host_machine, subset_content_hashes
from harness.results.ranges import Count
from harness.results.run_checks import Host, Id, ManifestReferences, PlainText, Settings, Sha256, Timestamp
from harness.results.schema import STRICT, Hertz, Kind, Reported, Source, parse
from harness.samples import CleanLabels

if TYPE_CHECKING:
    from harness.boards import Board
    from harness.link.protocol import DeviceInfo
    from harness.model.card import ModelCard
    from harness.model.tflite_file import TfliteModel
    from harness.samples import Dataset


@dataclass(frozen=True, kw_only=True)
class HarnessSource:
    version: str | None = None
    git_sha: str | None = None
    git_dirty: bool | None = None


@dataclass(frozen=True, kw_only=True)
class ModelProvenance:
    card: PlainText
    file: str | None = None
    sha256: Sha256 | None = None
    bytes: Count | None = None
    card_file: str | None = None
    input: str | None = None
    output: str | None = None
    converted_from: dict[str, Any] | None = None  # a float model converted on the fly (harness/model/convert.py)
    frontend: str | None = None  # stream runs: the audio frontend model beside the keyword model

    @classmethod
    def of(cls, card: "ModelCard", model: "TfliteModel", **more) -> "ModelProvenance":
        return cls(
            card=card.name,
            file=str(model.path),
            sha256=model.sha256,
            bytes=len(model.data),
            card_file=str(card.card_path),
            input=model.input.describe(),
            output=model.output.describe(),
            **more,
        )


@dataclass(frozen=True, kw_only=True)
class BoardProvenance:
    id: Id
    kind: str | None = None
    latency_source: Source | None = None
    usb_serial_number: str | None = None
    flash_bytes: Count | None = None
    ram_bytes: Count | None = None

    @classmethod
    def of(cls, board: "Board", usb_serial_number: str | None) -> "BoardProvenance":
        return cls(
            id=board.id,
            kind=board.kind,
            latency_source=board.latency_source,
            usb_serial_number=usb_serial_number,
            flash_bytes=board.memory.flash_bytes,
            ram_bytes=board.memory.ram_bytes,
        )


@dataclass(frozen=True, kw_only=True)
class FirmwareBuild:
    """How harness built the firmware a board runs (harness/firmware/build.py for QEMU boards, the
    `harness flash` record of harness/firmware/platformio.py for real ones)."""

    build_id: str | None = None
    kernels: str | None = None
    compiler: str | None = None
    flags: str | list[str] | None = None
    tflm: dict[str, Any] | None = None
    makefile: str | None = None
    platform: str | None = None
    framework: str | None = None
    project: str | None = None
    flash_bytes: Count | None = None
    static_ram_bytes: Count | None = None
    sections: dict[str, Count] | None = None


@dataclass(frozen=True, kw_only=True)
class Timer:
    kind: str
    hz: Hertz


@dataclass(frozen=True, kw_only=True)
class DeviceProvenance:
    """What the device said at HELLO, and how harness built its firmware (None when it did not)."""

    board_id: str | None = None
    firmware_build_id: str | None = None
    protocol_version: int | None = None
    model_sha256_prefix: str | None = None
    arena_configured: Reported = None
    arena_used: Reported = None
    cpu_hz: Count | None = None
    timer: Timer | None = None
    firmware: FirmwareBuild | None = None
    baud: Count | None = None  # the link's rate as the run used it, after any SET_BAUD (None: not recorded)

    @classmethod
    def of(cls, info: "DeviceInfo", firmware: dict | None, link: dict | None = None) -> "DeviceProvenance":
        """What HELLO said; with the run's link stats, the baud rate it ran at."""
        return cls(
            baud=(link or {}).get("baud") or None,
            board_id=info.board_id,
            firmware_build_id=info.build_id,
            protocol_version=info.protocol_version,
            model_sha256_prefix=info.model_sha256_prefix,
            arena_configured=info.arena_configured or None,
            arena_used=info.arena_used or None,
            cpu_hz=info.cpu_hz,
            timer=Timer(kind=info.tick_kind.name.lower(), hz=info.tick_hz),
            firmware=parse(FirmwareBuild, firmware) if firmware else None,
        )


@dataclass(frozen=True, kw_only=True)
class DatasetProvenance:
    """Eval runs: the data, and per subset a hash of its members (equal hashes: the same samples)."""

    name: str | None = None
    labels: str | None = None
    labels_sha256: str | None = None
    subsets: list[PlainText] = field(default_factory=list)
    subset_content_sha256: dict[str, str] = field(default_factory=dict)
    limit: Count | None = None  # members per subset (order "dataset": samples in all)
    order: str | None = None  # "sampled": each subset's members drawn by `seed`; "dataset": the first ones
    seed: int | None = None
    order_seed: int | None = None  # --shuffle
    clean_labels: CleanLabels | None = None  # cleaned labels put over the flag CSVs' person label
    flag_contradictions: int | None = None  # the dataset's members of the subsets against their person label

    @classmethod
    def of(cls, dataset: "Dataset", subsets: list, samples: list, members=None, **drawn):
        """`samples`: the ones the run evaluated; `members`: each subset's ids among them it is scored on (by
        default its members); `drawn`: limit, order, seed, order_seed and flag_contradictions."""
        return cls(
            name=dataset.name,
            labels=str(dataset.csv_path),
            labels_sha256=dataset.csv_sha256,
            subsets=[s.name for s in subsets],
            subset_content_sha256=subset_content_hashes(samples, subsets, members),
            clean_labels=dataset.clean_labels,
            **drawn,
        )


@dataclass(frozen=True, kw_only=True)
class AudioProvenance:
    """Stream runs: the stream and the ledger its detections were scored against."""

    file: str
    sha256: str | None = None
    ledger: str | None = None
    ledger_sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class MeterProvenance:
    spec: str | None = None
    identity: str | None = None
    source: Source | None = None

    @classmethod
    def of(cls, spec: str, trace) -> "MeterProvenance":
        """`trace`: the meter's power trace (harness/energy/trace.py)."""
        return cls(spec=spec, identity=trace.meter, source=trace.source)


@dataclass(frozen=True, kw_only=True)
class Manifest:
    __pydantic_config__ = STRICT
    run_id: Id
    kind: Kind = "eval"
    harness: HarnessSource | None = None
    started: Timestamp  # ISO 8601, as the run recorded it when it started
    finished: Timestamp | None = None
    settings: Settings = None  # the run's settings as given (eval: harness/eval/settings.py)
    model: ModelProvenance
    board: BoardProvenance
    device: DeviceProvenance = DeviceProvenance()
    dataset: DatasetProvenance | None = None  # eval runs
    audio: AudioProvenance | None = None  # stream runs
    references: ManifestReferences = None  # eval runs: name -> description, and "refused": name -> why
    host: Host = None  # harness/results/provenance.py host_machine()
    meter: MeterProvenance | None = None

    @classmethod
    def new(cls, **fields) -> "Manifest":
        """A manifest of a run on this machine, with this harness."""
        return cls(harness=parse(HarnessSource, harness_source()), host=host_machine(), **fields)
