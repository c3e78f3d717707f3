"""What every board driver shares: the per-connection options, the started device's endpoint, and the
session flow (fault proxy, protocol handshake) on top of it.

A driver is made per connection from (board, model, options). Like labgrid's resource -> driver split,
kept small: `start()` brings up the device and yields its Endpoint (the open link, and how to reset the
device), and `session()` puts the chosen protocol's DeviceSession on it. Links are pyserial ports opened
from a device path or URL (pty paths, socket://, rfc2217://), as pyserial's URL handlers open them.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import serial

from harness.boards import Board
from harness.errors import UserError, setting
from harness.firmware.eembc_dut import EembcDutBuild
from harness.firmware.tflm_tree import TflmTree
from harness.link.faults import FaultProxy, FaultSpec
from harness.link.protocol import DeviceInfo
from harness.link.registry import NATIVE_PROTOCOL, session_type
from harness.link.roles import BaudSwitching, Profiling, Recovery, refuse
from harness.link.session import DeviceSession
from harness.link.transport import open_link
from harness.model.card import EembcDut
from harness.model.dut import DeviceShare, DutComputation
from harness.model.tflite_file import TfliteModel


@dataclass(frozen=True)
class ConnectOptions:
    """How one command reaches its board, and what it will use of the session."""

    port: str | None = None  # a real board's device path or pyserial URL; None or "auto": found by USB id
    serial_number: str | None = None  # with several boards of a kind attached
    protocol: str = NATIVE_PROTOCOL  # a name in harness/link/registry.py
    faults: FaultSpec | None = None  # damage the link through a proxy (harness/link/faults.py)
    labgrid_place: str | None = None  # a board in a labgrid farm
    tflm: TflmTree | None = None  # the TFLM tree QEMU firmware is built with
    frontend: Path | None = None  # keyword streaming: the audio frontend model the board runs beside the model
    roles: tuple[type, ...] = ()  # what the command needs beyond the core session (harness/link/roles.py)
    eembc: EembcDut | None = None  # --protocol eembc: the model card's DUT firmware (its model name, its input)
    computation: DutComputation | None = None  # what the device computes with the model (None: its own tensors)

    @classmethod
    def named_by(cls, settings, **more) -> "ConnectOptions":
        """The options a command's settings name (EvalSettings, a command line's args, a request: whichever of
        the settings in NAMED_BY_SETTINGS it has), with what the command adds (`more`: tflm, uses, ...). The
        one place a command makes its options."""
        named = {field: getattr(settings, name) for name, field in NAMED_BY_SETTINGS.items() if hasattr(settings, name)}
        return cls(**(named | more))


# The settings (their names in EvalSettings and as flags) that say how to reach a board, and their fields.
NAMED_BY_SETTINGS = {
    "port": "port",
    "serial": "serial_number",
    "protocol": "protocol",
    "faults": "faults",
    "labgrid_place": "labgrid_place",
}


@dataclass
class Endpoint:
    """A started device: its open link, and what else the driver knows of it."""

    link: serial.SerialBase
    reset: Callable[[], None] | None = None  # reset the device (the fault proxy's reset-every)
    firmware: dict | None = None  # how harness built the firmware it runs
    switch_baudrate: int = 0  # after the handshake, move the link to this rate (0: stay)
    comes_back: bool = True  # a port that goes away may return (USB, network); not a started board's own
    lossless: bool = False  # a link that loses no bytes (QEMU's local socket): silence is a slow device


class Driver(ABC):
    kind: ClassVar[str]  # the board kind it drives ("labgrid": a device board reached through a place)
    protocols: ClassVar[tuple[str, ...]] = (NATIVE_PROTOCOL,)  # what its firmware may speak (link/registry.py)
    emulates: ClassVar[frozenset[str]] = frozenset()  # the link emulation options it takes (--link-baud, …)
    injects_faults: ClassVar[bool] = True  # a fault proxy can sit in its link
    takes_port: ClassVar[bool] = False  # its link is a port the user may name (a real board's)
    runs_users_firmware: ClassVar[bool] = False  # flashed by the user (a real board), not started by harness
    # Its MLPerf Tiny DUT firmware is the card's (the user's, or one harness builds from the card as the
    # reference submission is: its model name and input form); the virtual board serves harness's own DUT.
    runs_cards_dut: ClassVar[bool] = True
    takes_baud: ClassVar[bool] = False  # its serial rate is the user's to set (--baud): a real board's
    builds_at_start: ClassVar[bool] = False  # it builds the model's firmware with a TFLM tree as it starts (QEMU)
    flashes: ClassVar[bool] = True  # `harness flash` puts firmware on it (the virtual board runs any model as is)
    uploads_project: ClassVar[bool] = False  # `harness flash` uploads a generated PlatformIO project to it
    profiles: ClassVar[bool] = True  # its firmware's runner times operators (PROFILE)
    no_profiler: ClassVar[str] = "its firmware's runner has no profiler"  # why PROFILE may be unsupported

    @classmethod
    def refuse_port(cls, board: Board, port: str | None) -> None:
        """A port named for a board harness starts and connects itself would be ignored: refuse it."""
        if port not in (None, "auto") and not cls.takes_port:
            raise UserError(
                f"{board.id} is {board.a_kind}: harness starts it and opens its link itself, so it has no "
                f"port to name; drop {setting('port')} {port} or pass a real board to {setting('board')}"
            )

    @classmethod
    def refuse_faults(cls, faults: FaultSpec | None) -> None:
        if faults and not cls.injects_faults:
            raise UserError(f"{setting('faults')} works with the virtual board and real boards, not QEMU boards")

    def __init__(self, board: Board, model: TfliteModel | None, options: ConnectOptions):
        self.board, self.model, self.options = board, model, options
        self.check()

    @property
    def session_type(self) -> type[DeviceSession]:
        return session_type(self.options.protocol)

    def check(self) -> None:
        """Refuse, before anything starts, what this board and protocol cannot do."""
        options = self.options
        self.refuse_port(self.board, options.port)
        session = self.session_type  # an unknown protocol is refused here
        if options.protocol not in self.protocols:
            raise UserError(
                f"{setting('protocol')} {options.protocol} needs a board whose firmware speaks it: {self.board.id} "
                f"({self.board.kind}) runs harness's protocol only"
            )
        if session.NEEDS_MODEL and self.model is None:
            raise UserError(
                f"{setting('protocol')} {options.protocol} needs a model: its device reports no tensor layout"
            )
        self.refuse_faults(options.faults)
        link = [Recovery] if options.faults else []
        link += [BaudSwitching] if self.board.link.switch_baudrate else []
        refuse(session, *options.roles, *link)
        if Profiling in options.roles and not self.profiles:
            raise UserError(f"{self.board.id} cannot time operators: {self.no_profiler}; pass a QEMU or real board")

    @property
    def share(self) -> DeviceShare | None:
        """What the device does of the run's computation (None: the model's tensors, whatever they are)."""
        computation = self.options.computation
        return DeviceShare.of(computation, self.session_type.COMPUTES) if computation else None

    @property
    def device_computes(self) -> str:
        """The kind of computation the device does (harness/model/dut.py): a DUT's result, or the model's."""
        return self.share.tensors.kind if self.share else "model"

    def dut_build(self, mode: str = "performance") -> "EembcDutBuild | None":
        """What harness builds into this board's firmware: with --protocol eembc the card's MLPerf Tiny DUT
        (harness/firmware/eembc_dut.py), else None (harness's protocol core)."""
        if not self.session_type.DUT_FIRMWARE:
            return None
        return EembcDutBuild.for_card(self.options.eembc, self.device_computes, mode)

    @abstractmethod
    def start(self) -> AbstractContextManager[Endpoint]:
        """The device started (where harness starts it) with its link open, for the block; stopped after."""

    @contextmanager
    def session(self, meet_firmware: bool = True) -> Iterator[DeviceSession]:
        """A session that has said hello to the started device, through the fault proxy when asked;
        meet_firmware: checked to run the firmware the model card describes (`flash` checks its own upload)."""
        with self.start() as endpoint, _through_faults(endpoint, self.options.faults) as (link, counts):
            tensors = self.share.tensors if self.share else self.model
            client = self.session_type.over(link, tensors, endpoint.switch_baudrate)
            if meet_firmware and self.runs_cards_dut:  # the virtual board serves its own DUT, whatever the card
                client.meet_firmware_of(self.options.eembc)
            if not endpoint.comes_back:
                client.reconnect_seconds = 0.0
            client.lossless = endpoint.lossless and not self.options.faults
            client.stats.faults_injected = counts
            client.firmware = endpoint.firmware
            yield client

    def reflash_advice(self) -> str:
        """How to put the model on this board: the fix a board that runs another model is refused with."""
        return f"run `harness flash --board {self.board.id}` with this model first"

    def flash(self, project=None) -> DeviceInfo | None:
        """Put the firmware on the board and return what it answers, which the flash command checks against
        what it built; None: there is nothing to flash. Boards harness starts itself (QEMU, hosted HALs) build
        their firmware as they start: booting is flashing."""
        with self.session(meet_firmware=False) as client:
            return client.info

    def _open(
        self, url: str, board: Board | None = None, reset=None, comes_back: bool = True
    ) -> AbstractContextManager[Endpoint]:
        return _opened(url, board or self.board, reset, comes_back)


@contextmanager
def _opened(url: str, board: Board, reset, comes_back: bool) -> Iterator[Endpoint]:
    link = open_link(url, board.link.baudrate, board.link.reset_on_connect)
    try:
        yield Endpoint(link, reset, switch_baudrate=board.link.switch_baudrate, comes_back=comes_back)
    finally:
        link.close()


@contextmanager
def _through_faults(endpoint: Endpoint, faults: FaultSpec | None) -> Iterator[tuple[serial.SerialBase, dict | None]]:
    """With faults: a proxy pseudo-terminal that damages the link, and its running counts."""
    if not faults:
        yield endpoint.link, None
        return
    with FaultProxy(endpoint.link, faults, endpoint.reset) as proxy:
        link = open_link(proxy.path, endpoint.link.baudrate)
        try:
            yield link, proxy.counts
        finally:
            link.close()
