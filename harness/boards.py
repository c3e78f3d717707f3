"""Boards are data: one TOML file per board in boards/."""

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import UserError
from harness.paths import boards_dir

LATENCY_SOURCES = ("device", "emulated", "sim")


@dataclass(frozen=True)
class Board:
    id: str
    name: str
    kind: str  # "device", "emulated" or "virtual"
    latency_source: str
    flash_bytes: int
    ram_bytes: int
    baudrate: int = 115200
    switch_baudrate: int = 0  # after the handshake, move the link to this rate (0: stay); see docs/link.md
    usb_ids: tuple[str, ...] = ()
    reset_on_connect: str | None = None  # "esp32": hold DTR/RTS inactive on open, then pulse EN
    cpu_hz: int = 0
    core: str = ""
    firmware: dict = field(default_factory=dict)
    platformio: dict = field(default_factory=dict)
    qemu: dict = field(default_factory=dict)
    sim: dict = field(default_factory=dict)  # the virtual board's link emulation: link_baud, max_baudrate, ...
    tflm: dict = field(default_factory=dict)  # the TFLM tree harness prepares: kernels, target, target_arch
    source_file: Path | None = None


def _load(path: Path) -> Board:
    try:
        data = tomllib.loads(path.read_text())
        link = data.get("link", {})
        board = Board(
            id=data["id"],
            name=data["name"],
            kind=data["kind"],
            latency_source=data["latency_source"],
            flash_bytes=int(data["memory"]["flash_bytes"]),
            ram_bytes=int(data["memory"]["ram_bytes"]),
            baudrate=int(link.get("baudrate", 115200)),
            switch_baudrate=int(link.get("switch_baudrate", 0)),
            usb_ids=tuple(link.get("usb_ids", ())),
            reset_on_connect=link.get("reset_on_connect"),
            cpu_hz=int(data.get("cpu_hz", 0)),
            core=data.get("core", ""),
            firmware=data.get("firmware", {}),
            platformio=data.get("platformio", {}),
            qemu=data.get("qemu", {}),
            sim=data.get("sim", {}),
            tflm=data.get("tflm", {}),
            source_file=path,
        )
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise UserError(f"board file {path} is invalid ({exc}); compare it with boards/sim.toml") from exc
    if board.baudrate in link.get("forbidden_baudrates", ()):
        raise UserError(f"board file {path}: baudrate {board.baudrate} is forbidden for this board ({link})")
    if board.latency_source not in LATENCY_SOURCES:
        raise UserError(f"board file {path}: latency_source must be one of {', '.join(LATENCY_SOURCES)}")
    return board


def all_boards() -> dict[str, Board]:
    return {b.id: b for b in map(_load, sorted(boards_dir().glob("*.toml")))}


def get_board(name: str) -> Board:
    boards = all_boards()
    if name in boards:
        return boards[name]
    raise UserError(f"unknown board {name!r}; valid boards: {', '.join(sorted(boards))}")
