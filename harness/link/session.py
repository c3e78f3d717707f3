"""The device session: what every command uses of a connected board, declared once.

Every wire protocol (harness/link/registry.py) implements it: ours (harness/link/client.py, DeviceClient) and
the MLPerf Tiny / EEMBC DUT text protocol (harness/link/eembc.py, EembcClient). eval, perf and the energy windows
use a board only through these members, so a protocol that lacks one is found by the type checker and by
instantiation (an abstract member left out), never on a user's bench. What only some protocols do (operator
profiles, keyword streaming, the link test, baud switching, recovering a damaged link) is a role of its own
(harness/link/roles.py): a protocol that lacks one has no such members, and a command that needs it is refused
before it starts.
"""

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Self

from harness.errors import LinkError, UserError
from harness.link.protocol import DeviceInfo, InvokeResult, Timing

if TYPE_CHECKING:
    from harness.model.card import EembcDut
    from harness.model.tflite_file import TfliteModel


class Unsupported(UserError):
    """The board's protocol has no way to do what was asked (the CLI prints it as one line, exit 2)."""


@dataclass
class LinkStats:
    frames_sent: int = 0
    resends: int = 0
    corrupt_frames: int = 0
    stale_frames: int = 0
    go_backs: int = 0  # input windows sent again from the last acknowledged byte
    baud: int = 0  # the rate the link ran at after the handshake
    baud_fallbacks: int = 0
    resets: int = 0  # boot notices recovered from with a new handshake
    reruns: int = 0  # samples sent again after a reset or a lost invoke
    timeouts: int = 0  # waits that ended in silence
    reconnects: int = 0  # times the port went away and came back
    chunk_bytes: int = 0  # the input chunk the last load used (harness/link/frame_sizer.py)
    input_wire_bytes: int = 0  # LOAD_INPUT frames written, framing and resends included
    input_tensor_bytes: int = 0  # the input tensor bytes those frames loaded
    inputs_encoded: int = 0  # inputs sent in a smaller exact form than their raw bytes (harness/link/input_forms.py)
    byte_error_rate: float = 0.0  # the link's byte error rate as the frame sizer estimates it
    faults_injected: dict | None = None  # from the fault-injection proxy, when one is in the middle


@dataclass(frozen=True)
class Identity:
    """Who a board is, as its HELLO says: the firmware (the board it was built for, its build id, its protocol)
    and the model it runs. A session's first HELLO sets it; every later connect must say the same."""

    board_id: str
    firmware_build_id: str
    protocol_version: int
    model_sha256_prefix: str  # "" where the protocol reports none (EEMBC DUTs)

    @classmethod
    def of(cls, info: DeviceInfo) -> "Identity":
        return cls(info.board_id, info.build_id, info.protocol_version, info.model_sha256_prefix)

    def differences(self, other: "Identity") -> str:
        """What `other` says that this does not, as `model 1a2b…, not 3c4d…`."""
        fields = {
            "board": (self.board_id, other.board_id),
            "firmware build": (self.firmware_build_id, other.firmware_build_id),
            "protocol": (self.protocol_version, other.protocol_version),
            "model": (self.model_sha256_prefix, other.model_sha256_prefix),
        }
        return ", ".join(
            f"{what} {theirs or 'unknown'}, not {mine or 'unknown'}"
            for what, (mine, theirs) in fields.items()
            if mine != theirs
        )


class BoardChanged(LinkError):
    """At a connect after the session's first (after a reset, or once its port came back), the device is not
    the board the session began with: another firmware or model, or nothing that answers as harness firmware
    (`said` None). Nothing more is sent to it; a run retires the board."""

    def __init__(self, expected: Identity, said: Identity | None, why: str = ""):
        what = f"says {expected.differences(said)}" if said else f"does not answer as harness firmware ({why})"
        super().__init__(
            f"the board behind the port is no longer the run's: it {what}; check what is attached to the port"
        )
        self.expected, self.said = expected, said


class BoardLost(LinkError):
    """The board's port went away in the middle of a session whose caller hands the board's samples on
    (DeviceSession.hands_on_loss): raised at once, before any wait; `reconnect()` then waits for it."""

    def __init__(self, cause: Exception):
        super().__init__(f"the board's port went away ({cause})")


@dataclass(frozen=True)
class Span:
    """Inferences a device ran back to back in one request: how long its own clock says they took (None
    without a real clock), when on the host's monotonic clock they began (the request reached the
    device: sent, plus its bytes' time on the wire) and when the answer that followed them was read."""

    inferences: int
    seconds: float | None
    start: float
    answered: float

    @property
    def window(self) -> tuple[float, float] | None:
        """The span on the host's clock, as long as the device's timer says from its start (None without
        a real clock). Not anchored at the answer: a long answer's transfer would shift it late. But never
        ending after the answer was read: the start adds the request's time on the wire at the port's
        nominal rate, which a faster link (a pseudo-terminal, USB CDC) crosses sooner."""
        if self.seconds is None:
            return None
        start = min(self.start, self.answered - self.seconds)  # NaN (start not known) stays NaN
        return (start, start + self.seconds)


class DeviceSession(ABC):
    protocol: ClassVar[str]  # the --protocol name
    # The roles (harness/link/roles.py) this protocol lacks, with the reason a command that needs one is refused.
    LACKS: ClassVar[Mapping[type, str]] = {}
    NEEDS_MODEL: ClassVar[bool] = False  # the device reports no tensor layout: the model gives it
    # What its device may compute from what it is sent (harness/model/dut.py kinds): harness firmware
    # answers the model's output tensor; MLPerf Tiny DUT firmware may answer a score of its own.
    COMPUTES: ClassVar[tuple[str, ...]] = ("model",)
    # The serial rate its firmware sets for itself (MLPerf Tiny DUT firmware), used unless --baud names one;
    # None: the board file's rate.
    FIRMWARE_BAUD: ClassVar[int | None] = None
    DUT_FIRMWARE: ClassVar[bool] = False  # an MLPerf Tiny DUT: the virtual board plays one (its [eembc] model)

    def __init__(self, port):
        self.port = port  # the open link (a pyserial port)
        # How long a port that went away is waited for; 0 where it cannot return (a started board's own).
        self.reconnect_seconds = 30.0
        self.stats = LinkStats()
        self.info: DeviceInfo | None = None  # set by hello()
        self.firmware: dict | None = None  # how harness built the firmware, where it did (QEMU boards)
        self.last_invoke: tuple[float, float] | None = None  # host monotonic: inference asked, its answer read
        # The same inference as the device timed it, ending when its marker arrived (None without a real clock).
        self.last_device_window: tuple[float, float] | None = None
        self.identity: Identity | None = None  # what the first HELLO said; every later one must say the same
        # Set by a caller whose samples other boards can take (a run): a port that goes away raises BoardLost
        # at once rather than being waited for in the middle of a sample, and reconnect() waits for it.
        self.hands_on_loss = False
        # The link loses no bytes (a local socket to an emulator, no fault proxy): silence is a device the host
        # does not give the CPU to, never a lost frame, so it is waited for rather than resent.
        self.lossless = False

    # --- starting -------------------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def over(cls, port, model: "TfliteModel | None", switch_baudrate: int = 0) -> Self:
        """A session on an open link that has said hello (and switched the link's rate, where asked).
        `model` gives the tensors sent and answered: the model, or what its DUT computes with it
        (harness/model/dut.py), each with `input` and `output`."""

    @abstractmethod
    def hello(self) -> DeviceInfo:
        """The handshake: what the device runs, its frames, its timer and its tensors."""

    def _identified(self, info: DeviceInfo) -> DeviceInfo:
        """Every HELLO passes here: the first sets the session's identity, a later one that differs is
        BoardChanged (never taken as the device's information)."""
        said = Identity.of(info)
        if self.identity is None:
            self.identity = said
        elif said != self.identity:
            raise BoardChanged(self.identity, said)
        return info

    @abstractmethod
    def meet_firmware_of(self, dut: "EembcDut | None") -> None:
        """On firmware the user flashed (a real board): check, before any sample, that it is the firmware the
        model card describes (`dut`: the card's [eembc] table, None when it has none)."""

    # --- what the commands use --------------------------------------------------------------------------
    @abstractmethod
    def run(self, data: bytes) -> InvokeResult:
        """One input through the model: its output and the device's timing."""

    @abstractmethod
    def run_stream(self, inputs: Iterable[bytes]) -> Iterator[InvokeResult]:
        """Every input through the model, results in order (pipelined where the protocol can)."""

    @abstractmethod
    def bench(self, data: bytes, runs: int, warmups: int = 0) -> list[Timing]:
        """`runs` timed inferences of one resident input after `warmups` untimed ones."""

    @abstractmethod
    def back_to_back(self, data: bytes, count: int) -> list[Span]:
        """`count` inferences of one resident input run back to back, in as few requests as the protocol
        allows (one span per request), without warm-ups."""
