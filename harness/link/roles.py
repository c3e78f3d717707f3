"""What a board may do beyond the core session, one small protocol per role.

Every protocol's session runs inputs through the model (harness/link/session.py, DeviceSession). The rest is
a role a protocol has or lacks: a session class that has one implements it (and names it among its bases), one
that lacks it simply has no such members. A command names the roles it needs (ConnectOptions.roles) and is
refused before its board starts where the protocol lacks one; in the middle of a command, `require` narrows a
session to the role it is about to use. The refusal is one line: the session class's LACKS gives its reason.
"""

from abc import abstractmethod
from collections.abc import Callable
from typing import Protocol, TypeVar, runtime_checkable

from harness.errors import setting
from harness.link.layer_trace import LayerRecord
from harness.link.protocol import StreamChunkResult, Timing
from harness.link.session import Unsupported


@runtime_checkable
class Profiling(Protocol):
    """`harness profile`: one inference timed operator by operator."""

    @abstractmethod
    def profile(self, data: bytes) -> tuple[Timing, list[tuple[str, Timing]], int]:
        """One inference timed operator by operator: (whole, per operator, operators run)."""


@runtime_checkable
class LayerTracing(Protocol):
    """`harness debug layers`: one inference traced operator by operator, each output digested as it lay in
    the device's memory, and any operator's output read back whole."""

    @abstractmethod
    def layer_trace(self, data: bytes) -> list[LayerRecord]:
        """One inference of `data`: a record per operator of the main graph, in order."""

    @abstractmethod
    def layer_tensor(self, data: bytes, op_index: int, output: int = 0) -> bytes:
        """One inference of `data`: the bytes of output `output` of operator `op_index` as it lay in memory."""


@runtime_checkable
class KeywordStreaming(Protocol):
    """`harness stream run`: audio in, the on-device keyword pipeline's detections out."""

    @abstractmethod
    def stream_start(self, config: bytes) -> int:
        """Configure and reset the on-device keyword pipeline; returns its frontend's arena use."""

    @abstractmethod
    def stream_audio(self, samples: bytes) -> StreamChunkResult:
        """Audio in, the detections it completed out."""


@runtime_checkable
class LinkTesting(Protocol):
    """`harness boards link-test`: the link's bytes echoed, the device's fixed workload timed."""

    @abstractmethod
    def echo(self, payload: bytes) -> bytes:
        """The device sends the payload back."""

    @abstractmethod
    def perf(self, iterations: int) -> tuple[Timing, int]:
        """The device times its fixed workload: the span and the workload's checksum."""


@runtime_checkable
class BaudSwitching(Protocol):
    """A board's or a command's switch_baud: both ends of the link move to another rate after the handshake."""

    @abstractmethod
    def switch_baud(self, baud: int) -> bool:
        """Move both ends of the link to `baud` after the handshake; True if switched."""


@runtime_checkable
class Recovery(Protocol):
    """A damaged link is recovered from (frames sent again, a reset device met with a new handshake, a port
    that went away waited for): what the fault proxy (--faults) and a fleet that hands samples on need."""

    @abstractmethod
    def reconnect(self, wanted: Callable[[], bool]) -> None:
        """After BoardLost: wait for the port to come back (while `wanted()`), then HELLO from the same board."""


ROLES = (Profiling, LayerTracing, KeywordStreaming, LinkTesting, BaudSwitching, Recovery)

Role = TypeVar("Role")


def refuse(session_type: type, *roles: type) -> None:
    """Unsupported for the first of `roles` this protocol's session lacks; before anything starts."""
    for role in roles:
        if role not in ROLES:
            raise ValueError(f"not a role of a device session: {role!r}")
        if not issubclass(session_type, role):
            why = getattr(session_type, "LACKS", {}).get(role, f"it has no {role.__name__} role")
            raise Unsupported(f"{setting('protocol')} {session_type.protocol}: {why}")


def require(session, role: type[Role]) -> Role:
    """The session as `role`, or Unsupported (in one line) where its protocol lacks it."""
    refuse(type(session), role)
    return session
