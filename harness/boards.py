"""Boards are data: one TOML file per board, checked field by field against the tables below.

The package's boards/ folder holds the boards harness ships; a user adds their own in the user boards folder
(HARNESS_BOARDS_DIR, else the platform's config folder + /harness/boards) or names a file with
`--board path/to/board.toml`. Every default lives here, once. docs/boards.md describes each field.
"""

import dataclasses
import functools
import operator
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import platformdirs
import pydantic
from pydantic import BaseModel

from harness import reading
from harness.defaults import DEFAULT_BOARD as DEFAULT_BOARD  # the board a command runs on unless told
from harness.defaults import MAX_BAUD
from harness.errors import UserError
from harness.names import check_id
from harness.paths import boards_dir, share_dir

Baud = Annotated[int, pydantic.Field(ge=1, le=MAX_BAUD)]
BaudOrZero = Annotated[int, pydantic.Field(ge=0, le=MAX_BAUD)]  # 0: stay, unpaced or none
# The frame sizes the device core accepts (firmware/core/hp_device.h HP_MIN_RX_FRAME, HP_MIN_TX_FRAME: a frame's
# 12 bytes of header and trailer plus 16 bytes of request, or the largest HELLO); a frame's length is 16 bits.
MIN_RX_FRAME = 12 + 16
MIN_TX_FRAME = 12 + 199
MAX_FRAME = 12 + 0xFFFF
LatencySource = Literal["device", "emulated", "sim"]
# A board file is refused, naming the field, when it holds a key no table declares or a number that is not finite.
_STRICT = pydantic.ConfigDict(extra="forbid", strict=False, frozen=True, allow_inf_nan=False)
# The Cortex-M FPUs a board file may name (`fpu`, GCC's -mfpu spelling) and what each runs: (FPv4 or FPv5, double
# precision). A -mfpu flag in a board file must name one of them that the board's own FPU runs: fpv4-sp-d16 runs on
# every one of them, fpv5-d16 only on an FPv5 with double precision (docs/boards.md, "FPU flags").
FPUS: dict[str, tuple[int, bool]] = {"fpv4-sp-d16": (4, False), "fpv5-sp-d16": (5, False), "fpv5-d16": (5, True)}
Fpu = Literal[tuple(FPUS)]


@dataclass(frozen=True)
class Memory:
    __pydantic_config__ = _STRICT
    flash_bytes: pydantic.PositiveInt
    ram_bytes: pydantic.PositiveInt


@dataclass(frozen=True)
class Link:
    __pydantic_config__ = _STRICT
    baudrate: Baud = 115200
    switch_baudrate: BaudOrZero = 0  # after the handshake, move the link to this rate (0: stay)
    usb_ids: tuple[str, ...] = ()  # VID:PID of the board's USB serial bridge, for `--port auto`
    reset_on_connect: Literal["esp32"] | None = None  # "esp32": hold DTR/RTS inactive on open, then pulse EN
    forbidden_baudrates: tuple[int, ...] = ()  # rates the board's bridge treats as commands (Arduino 1200 touch)


@dataclass(frozen=True)
class Firmware:
    """What the generated firmware is built with: the HAL family, frame and buffer sizes, the arena."""

    __pydantic_config__ = _STRICT
    arena_bytes: pydantic.PositiveInt
    rx_frame_bytes: Annotated[int, pydantic.Field(ge=MIN_RX_FRAME, le=MAX_FRAME)]
    tx_frame_bytes: Annotated[int, pydantic.Field(ge=MIN_TX_FRAME, le=MAX_FRAME)]
    rx_buffer_bytes: pydantic.NonNegativeInt = 0  # what the board's receive ring holds (0: a frame at a time)
    family: str | None = None  # the HAL folder firmware/boards/<family>
    hal: str | None = None  # a HAL folder of the user's own, relative to the board file (instead of family)
    cmsis_core: str | None = None  # the CMSIS core headers' core name (Arduino builds)
    frontend_arena_bytes: pydantic.PositiveInt = 32768  # the audio frontend's own arena (keyword streaming)
    # Bare-metal (Makefile) builds only: compiler CPU flags and the linker script's layout.
    cpu_flags: str | None = None
    code_origin: pydantic.NonNegativeInt | None = None
    ram_origin: pydantic.NonNegativeInt | None = None
    stack_bytes: pydantic.PositiveInt | None = None


@dataclass(frozen=True)
class BoardDefinition:
    """A PlatformIO board definition (the board JSON's fields that builds and uploads read), for a board the
    pinned platform lacks. Its flash and RAM limits are the board file's [memory]."""

    __pydantic_config__ = _STRICT
    name: str
    mcu: str  # e.g. "stm32h7a3zit6q"
    cpu: str  # e.g. "cortex-m7"
    f_cpu: pydantic.PositiveInt
    extra_flags: str  # the defines the framework needs, e.g. "-DSTM32H7xx -DSTM32H7A3xxQ"
    product_line: str
    variant: str  # the framework's variant folder, e.g. "STM32H7xx/H7A3Z(G-I)TxQ_H7B3ZITxQ"
    core: str = ""  # the platform's build core ("stm32": stm32duino)
    frameworks: tuple[str, ...] = ("arduino",)
    upload_protocols: tuple[str, ...] = ("stlink",)
    openocd_target: str = ""
    jlink_device: str = ""
    svd_path: str = ""
    url: str = ""
    vendor: str = ""


@dataclass(frozen=True)
class PlatformIO:
    __pydantic_config__ = _STRICT
    platform: str  # pinned, e.g. "platformio/ststm32@19.6.0"
    board: str
    framework: Literal["arduino", "espidf", "mbed"]
    upload_protocol: str
    build_flags: tuple[str, ...] = ()
    build_unflags: tuple[str, ...] = ()
    tflm: Literal["tree", "lib_deps", "idf_component"] = "tree"  # where TFLM comes from (docs/tflm.md)
    lib_deps: tuple[str, ...] = ()
    idf_components: dict[str, str] = field(default_factory=dict)
    # Flags the linker must get: PlatformIO's build_flags reach only the compiler (build_unflags take a flag from
    # both), so the project adds these to the link with a post-build script of its own (link_flags.py).
    link_flags: tuple[str, ...] = ()
    # A board PlatformIO's pinned platform does not have: its board JSON, generated into the project's boards/.
    board_definition: BoardDefinition | None = None


@dataclass(frozen=True)
class Qemu:
    __pydantic_config__ = _STRICT
    machine: str
    icount_shift: pydantic.NonNegativeInt = 0


@dataclass(frozen=True)
class Sim:
    """The virtual board's link emulation (docs/link.md), and for hosted boards the HAL compiled for this
    machine (harness/device/hosted_hal.py)."""

    __pydantic_config__ = _STRICT
    link_baud: BaudOrZero = 0  # pace the link like a UART at this rate (0: as fast as it goes)
    max_baudrate: BaudOrZero = 0  # the highest rate SET_BAUD accepts (0: none)
    emulate_invoke_ms: pydantic.NonNegativeFloat = 0  # an invoke lasts at least this long
    hal: str | None = None  # hosted: which HAL (stm32duino, mbed, espidf)
    serial_rx_buffer_size: pydantic.PositiveInt | None = None  # hosted stm32duino: the core's ring
    cdc_callback_slots: pydantic.NonNegativeInt | None = None  # hosted mbed, tests: the USBSerial callback table


@dataclass(frozen=True)
class Eembc:
    """MLPerf Tiny / EEMBC DUT firmware on this board (docs/eembc.md)."""

    __pydantic_config__ = _STRICT
    timestamp_pin: str = "D7"  # energy mode: the pin the DUT pulls low for a timestamp


@dataclass(frozen=True)
class TflmRecipe:
    """The TFLM tree harness prepares for this board when --tflm is not given (docs/tflm.md)."""

    __pydantic_config__ = _STRICT
    kernels: str
    target: str = ""
    target_arch: str = ""


@dataclass(frozen=True, kw_only=True)
class Board:
    """What every board file holds. A board is one of the kinds below (the file's `kind` picks it): each kind
    declares the tables it needs and answers, for the layers below the drivers, what it is (builds firmware,
    has size limits, where its TFLM comes from)."""

    __pydantic_config__ = _STRICT
    id: str
    name: str
    kind: str  # each board type narrows it to its own Literal (below); Kind is their union
    latency_source: LatencySource
    memory: Memory
    firmware: Firmware
    link: Link = Link()
    core: str = ""
    fpu: Fpu | None = None  # the FPU the chip has (GCC's -mfpu name); none stated: no FPU check
    cpu_hz: pydantic.NonNegativeInt = 0
    eembc: Eembc = Eembc()
    platformio: None = None  # a device board's own table (DeviceBoard)
    qemu: None = None  # an emulated board's own table (EmulatedBoard)
    sim: Sim = Sim()
    tflm: TflmRecipe | None = None
    source_file: Path | None = None  # set by the loader, never read from the file

    builds_firmware: ClassVar[bool] = False  # harness builds firmware for it from firmware/ (needs a HAL folder)
    size_limited: ClassVar[bool] = True  # a model must fit its flash and arena

    @property
    def tflm_source(self) -> str:
        """Where its firmware gets TFLM when no --tflm is given: "tree" (harness prepares one), "lib_deps" or
        "idf_component" (the board file's pinned package), or "none"."""
        return "none"

    @property
    def a_kind(self) -> str:
        """Its kind in a sentence: "a virtual board", "an emulated board"."""
        return f"{_a(self.kind)} board"

    def kind_problem(self) -> str | None:
        """What this kind needs beyond its tables' types, missing; None: nothing."""
        return None

    @property
    def hal_dir(self) -> Path | None:
        """The board's HAL folder: its own (firmware.hal, beside the board file) or firmware/boards/<family>."""
        if self.firmware.hal:
            return (self.source_file.parent if self.source_file else Path.cwd()) / self.firmware.hal
        return share_dir() / "firmware" / "boards" / self.firmware.family if self.firmware.family else None

    def with_link(self, **changes) -> "Board":
        return dataclasses.replace(self, link=dataclasses.replace(self.link, **changes))

    def with_sim(self, **changes) -> "Board":
        return dataclasses.replace(self, sim=dataclasses.replace(self.sim, **changes))


@dataclass(frozen=True, kw_only=True)
class VirtualBoard(Board):
    """The device core compiled for this machine, running TFLM's host interpreter: no size limit."""

    kind: Literal["virtual"]
    size_limited: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class EmulatedBoard(Board):
    """Firmware harness builds and runs under QEMU."""

    kind: Literal["emulated"]
    qemu: Qemu = field()
    builds_firmware: ClassVar[bool] = True

    @property
    def tflm_source(self) -> str:
        return "tree"


@dataclass(frozen=True, kw_only=True)
class HostedBoard(Board):
    """A real board's HAL compiled for this machine (sim.hal names which)."""

    kind: Literal["hosted"]

    def kind_problem(self) -> str | None:
        return None if self.sim.hal else "a hosted board needs sim.hal (stm32duino, mbed or espidf)"


@dataclass(frozen=True, kw_only=True)
class DeviceBoard(Board):
    """A real board on a serial port, its firmware a PlatformIO project."""

    kind: Literal["device"]
    platformio: PlatformIO = field()
    builds_firmware: ClassVar[bool] = True

    @property
    def tflm_source(self) -> str:
        return self.platformio.tflm


def _kind_of(board: type[Board]) -> str:
    """The `kind` a board class is for: its Literal."""
    return typing.get_args(board.__dataclass_fields__["kind"].type)[0]


# The one list of board kinds: a new kind is its board type above, one entry here and its driver
# (harness/device/drivers/). The kind names, the union files are read as and the choices derive from it.
_BOARD_TYPES = (VirtualBoard, EmulatedBoard, HostedBoard, DeviceBoard)
BOARD_KINDS: dict[str, type[Board]] = {_kind_of(board): board for board in _BOARD_TYPES}
Kind = Literal[tuple(BOARD_KINDS)]
_ANY_BOARD = functools.reduce(operator.or_, _BOARD_TYPES)  # VirtualBoard | EmulatedBoard | ...
_BOARD = pydantic.TypeAdapter(Annotated[_ANY_BOARD, pydantic.Field(discriminator="kind")])
# A kind's own tables: missing from its board, or written in another kind's, the refusal names the table.
_TABLES = {"qemu": Qemu, "platformio": PlatformIO}


def _located(error: dict) -> tuple[type[Board], tuple]:
    """The board class an error is in and its location in that board: a tagged union's first part is the kind."""
    loc = tuple(error["loc"])
    if loc and loc[0] in BOARD_KINDS:
        return BOARD_KINDS[loc[0]], loc[1:]
    return Board, loc


def _table_fields(table: type) -> dict[str, object]:
    """A table's fields and their types: a dataclass's, or a pydantic model's ([eembc])."""
    if isinstance(table, type) and issubclass(table, BaseModel):
        return {name: f.annotation for name, f in table.model_fields.items()}
    return {f.name: f.type for f in dataclasses.fields(table)}


def _is_table(kind) -> bool:
    return dataclasses.is_dataclass(kind) or (isinstance(kind, type) and issubclass(kind, BaseModel))


def _valid_fields(table: type, loc: tuple) -> str:
    """The fields of the table an error is in, for the refusal's fix."""
    for part in loc[:-1]:
        nested = _table_fields(table).get(part)
        nested = next((a for a in getattr(nested, "__args__", (nested,)) if _is_table(a)), None)
        if nested is None:
            break
        table = nested
    return ", ".join(name for name, kind in _table_fields(table).items() if name != "source_file" and kind is not None)


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _problem(error: dict) -> str:
    board, loc = _located(error)
    kinds = ", ".join(BOARD_KINDS)
    if error["type"] == "union_tag_invalid":
        return f"field 'kind': {error['ctx']['tag']!r} is no board kind; valid: {kinds}"
    if error["type"] == "union_tag_not_found":
        return f"missing field 'kind' (one of {kinds})"
    if len(loc) == 1 and loc[0] in _TABLES:
        table, kind = loc[0], _kind_of(board)
        if error["type"] in ("missing", "missing_argument"):
            required = [
                f.name
                for f in dataclasses.fields(_TABLES[table])
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ]
            return f"{_a(kind)} board needs a [{table}] table ({', '.join(required)})"
        if error["type"] == "none_required":
            owner = next(k for k, b in BOARD_KINDS.items() if b.__dataclass_fields__[table].type is _TABLES[table])
            return f"{_a(kind)} board has no [{table}] table ({_a(owner)} board's): remove it"
    problem = reading.schema_problem({**error, "loc": loc})
    if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"{problem} (valid here: {_valid_fields(board, loc)})"
    return problem


def load_board_file(path: Path) -> Board:
    """One board file, validated: an unknown, missing or mistyped field is refused naming the field."""
    path = Path(path)
    return board_from_data(reading.read_toml(path, reading.BOARD), path)


def board_from_data(data: dict, path: Path) -> Board:
    """A board from its file's parsed TOML: checked field by field, or a UserError naming the field."""
    if "source_file" in data:
        raise UserError(f"board file {path}: unknown field 'source_file'")
    reading.refuse_control_characters(data, reading.BOARD, path)
    try:
        board = _BOARD.validate_python({**data, "source_file": path})
    except pydantic.ValidationError as exc:
        errors = reading.ordered_errors(exc)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise UserError(f"board file {path}: {_problem(errors[0])}{more}; see docs/boards.md") from None
    check_id(board.id, "board id", f"board file {path}")
    _check_consistent(board, path)
    return board


def _check_consistent(board: Board, path: Path) -> None:
    def refuse(problem: str):
        raise UserError(f"board file {path}: {problem}; see docs/boards.md")

    if board.link.baudrate in board.link.forbidden_baudrates:
        refuse(f"link.baudrate {board.link.baudrate} is one of this board's forbidden_baudrates")
    if board.firmware.family is not None:  # a folder name under firmware/boards, never a path out of it
        check_id(board.firmware.family, "firmware.family", f"board file {path}")
    if board.firmware.family and board.firmware.hal:
        refuse("firmware.family and firmware.hal both name a HAL folder: keep one")
    if board.hal_dir is not None and not board.hal_dir.is_dir():
        field_name = "firmware.hal" if board.firmware.hal else "firmware.family"
        refuse(f"{field_name}: no HAL folder {board.hal_dir}")
    if board.kind_problem():
        refuse(board.kind_problem())
    if board.builds_firmware and board.hal_dir is None:
        refuse("a board that gets firmware needs firmware.family or firmware.hal")
    fpu_problem = _fpu_flags_problem(board)
    if fpu_problem:
        refuse(fpu_problem)


def _mfpu(flags) -> list[str]:
    return [flag.split("=", 1)[1] for flag in flags if flag.startswith("-mfpu=")]


def _fpu_flags_problem(board: Board) -> str | None:
    """Whether the board file's -mfpu flags (compile, link, bare-metal CPU flags) agree with its `fpu`, or the
    problem in a sentence. Flags the framework gives and the board file does not name are for the ELF check
    (harness/firmware/fpu_check.py) to find in the built firmware."""
    pio = board.platformio
    given = [("firmware.cpu_flags", name) for name in _mfpu((board.firmware.cpu_flags or "").split())]
    if pio:
        given += [("platformio.build_flags", name) for name in _mfpu(pio.build_flags)]
        given += [("platformio.link_flags", name) for name in _mfpu(pio.link_flags)]
    for where, name in given:
        if name not in FPUS:
            return f"{where} gives -mfpu={name}, an FPU harness does not know (valid: {', '.join(FPUS)})"
        if board.fpu is None:
            return f"{where} gives -mfpu={name} but the board names no fpu; write fpu = the FPU its chip has"
        (version, double), (has_version, has_double) = FPUS[name], FPUS[board.fpu]
        if version > has_version or double > has_double:
            return f"{where} gives -mfpu={name}, which the board's fpu {board.fpu} cannot run; give -mfpu={board.fpu}"
    if pio is None:
        return None
    compiled, linked, removed = _mfpu(pio.build_flags), _mfpu(pio.link_flags), _mfpu(pio.build_unflags)
    if compiled and linked and compiled[-1] != linked[-1]:
        return (
            f"platformio.build_flags compiles for -mfpu={compiled[-1]} and platformio.link_flags links for "
            f"-mfpu={linked[-1]}; give both the same"
        )
    wanted = (compiled or linked or [board.fpu or "<fpu>"])[-1]
    if removed and not compiled:
        return (
            f"platformio.build_unflags removes -mfpu={removed[-1]} and build_flags gives none, so the compiler takes "
            f'GCC\'s default for the core; add "-mfpu={wanted}" to platformio.build_flags'
        )
    if removed and not linked:
        return (
            f"platformio.build_unflags removes -mfpu={removed[-1]} from the link too and link_flags gives none, so the "
            f"linker takes GCC's default libraries for the core (double precision on a Cortex-M7); add "
            f'"-mfpu={wanted}" to platformio.link_flags'
        )
    return None


def user_boards_dir() -> Path:
    override = os.environ.get("HARNESS_BOARDS_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir("harness")) / "boards"


@dataclass(frozen=True)
class BoardFiles:
    """Every board file read: the boards, and each file refused with its one-line reason."""

    boards: dict[str, Board]
    damaged: dict[Path, str]


def scan_boards() -> BoardFiles:
    """The package's boards, then the user's; a damaged file is set aside with its reason, never dropped.
    A user board may not reuse a package board's id."""
    boards: dict[str, Board] = {}
    damaged: dict[Path, str] = {}
    folders = [boards_dir(), user_boards_dir()]
    for path in (p for folder in folders if folder.is_dir() for p in sorted(folder.glob("*.toml"))):
        try:
            board = load_board_file(path)
        except UserError as exc:
            damaged[path] = exc.worded_for_cli()
            continue
        if board.id in boards:
            raise UserError(
                f"board file {path}: id {board.id!r} is already taken by {boards[board.id].source_file}; "
                "give the board an id of its own"
            )
        boards[board.id] = board
    return BoardFiles(boards, damaged)


def all_boards() -> dict[str, Board]:
    """Every board; a damaged board file is refused (its board might be the one asked for)."""
    found = scan_boards()
    if found.damaged:
        path, reason = next(iter(found.damaged.items()))
        others = f" ({len(found.damaged) - 1} more damaged board files)" if len(found.damaged) > 1 else ""
        raise UserError(f"{reason}{others}; fix or remove {path} (`harness boards list` names every damaged file)")
    return found.boards


def is_board_file(spec: str) -> bool:
    return spec.endswith(".toml") or os.sep in spec


def get_board(spec: str) -> Board:
    """A board by id (package or user boards folder), or a board file's path."""
    if is_board_file(spec):
        return load_board_file(Path(spec))
    boards = all_boards()
    if spec in boards:
        return boards[spec]
    raise UserError(f"unknown board {spec!r}; valid boards: {', '.join(boards)} (or a board file's path)")


def board_ids(kind: str | None = None, *, platformio: bool = False) -> list[str]:
    """Board ids for choices and help texts, from the board files: of one kind, or the PlatformIO boards."""
    chosen = BOARD_KINDS[kind] if kind else Board
    return [b.id for b in all_boards().values() if isinstance(b, chosen) and (not platformio or b.platformio)]
