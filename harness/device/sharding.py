"""One evaluation over several boards of one kind (harness/device/fleet.py names them).

Each board's session runs in a thread of its own and takes the next sample whenever it is free (pulled,
not dealt round-robin: a slow board simply takes fewer). Every board says hello before any sample runs,
so the caller can refuse a set of boards that do not run the same model and firmware. A board that fails
mid-run gives its unfinished samples back to the others, and its failure is kept; so does a board whose port
went away, at once, while it is waited for (it takes samples again once it is back and says it is the same
board: a board that says otherwise is retired, harness/link/session.py BoardChanged). Only the caller's
thread writes the journal, so it needs no lock (the host references run on their own thread,
harness/eval/host_work.py). One board is the same code with one thread.
"""

import contextvars
import dataclasses
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import serial

from harness.device.fleet import FleetMember
from harness.errors import LinkError
from harness.link.protocol import DeviceInfo, InvokeResult
from harness.link.roles import Recovery, require
from harness.link.session import BoardChanged, BoardLost, DeviceSession, Identity
from harness.model.dut import DeviceShare, device_bytes

# A board's failures that leave the other boards able to go on: its link, its port, its process.
BOARD_FAILURES = (LinkError, serial.SerialException, OSError)
STOP_WAIT_SECONDS = 10  # how long an interrupted run waits for boards to finish the sample they run


class Dealer:
    """The samples still to run: handed to whichever board asks, taken back from a board that fails."""

    def __init__(self, todo: list[int]):
        self._waiting = deque(todo)
        self._out: dict[str, set[int]] = {}  # per board: taken, no result yet
        self._changed = threading.Condition()
        self._stopped = False

    def take(self, board: str) -> int | None:
        """The next sample for this board, or None when none is waiting now (it may be later)."""
        with self._changed:
            if self._stopped or not self._waiting:
                return None
            index = self._waiting.popleft()
            self._out.setdefault(board, set()).add(index)
            return index

    def done(self, board: str, index: int) -> None:
        with self._changed:
            self._out[board].discard(index)
            self._changed.notify_all()

    def give_back(self, board: str) -> None:
        """A failed board's unfinished samples, first in line again, in their order."""
        with self._changed:
            self._waiting.extendleft(sorted(self._out.pop(board, ()), reverse=True))
            self._changed.notify_all()

    def more_work(self) -> bool:
        """Wait until a sample waits (True) or none can come any more (False: all done, or stopped)."""
        with self._changed:
            while not self._stopped and not self._waiting and any(self._out.values()):
                self._changed.wait()
            return not self._stopped and bool(self._waiting)

    def unfinished(self) -> bool:
        """Samples are still to run (waiting, or out with a board), and the run goes on: without waiting."""
        with self._changed:
            return not self._stopped and (bool(self._waiting) or any(self._out.values()))

    @property
    def left(self) -> int:
        with self._changed:
            return len(self._waiting) + sum(len(out) for out in self._out.values())

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()


@dataclass(frozen=True)
class Arrival:
    """One sample's result from one board, with the session's invoke windows as it read them (energy)."""

    board: str
    index: int
    result: InvokeResult
    last_invoke: tuple[float, float] | None
    last_device_window: tuple[float, float] | None


@dataclass
class BoardEnd:
    """How one board's part of the run ended."""

    name: str
    info: DeviceInfo | None = None
    stats: dict | None = None  # the session's link counters
    firmware: dict | None = None
    port: str | None = None  # the local device path, where there is one (a USB serial number is read from it)
    samples: int = 0
    failure: str | None = None
    # Retired: who it was at its first HELLO, and who answered at a later connect (None: no harness firmware).
    retired: tuple[Identity, Identity | None] | None = None


def _finished(share: DeviceShare | None, tensor: np.ndarray, answer: InvokeResult) -> InvokeResult:
    """The sample's result from the device's answer: the host finishes what the device's protocol does not."""
    return dataclasses.replace(answer, output=share.result(tensor, answer.output)) if share else answer


class ShardedStream:
    """Start every board's session (`with`), `ready()` for their hellos, `go()`, then `arrivals()`. `last`: a
    request the first board to finish its part makes before its session ends (its answer: `last_answer`)."""

    def __init__(
        self,
        members: list[FleetMember],
        tensors: Sequence[np.ndarray],
        todo: list[int],
        last: Callable[[DeviceSession], Any] | None = None,
    ):
        self._members, self._tensors = members, tensors
        self._last, self._last_taken = last, threading.Lock()
        self.last_answer: Any = None
        self._dealer = Dealer(todo)
        self._messages: queue.Queue = queue.Queue()
        self._go = threading.Event()
        self._threads: list[threading.Thread] = []
        self.ends = {m.name: BoardEnd(m.name) for m in members}

    def __enter__(self) -> "ShardedStream":
        for member in self._members:
            # in the caller's context: a board that builds its firmware is as quiet as the run (harness/console.py)
            serve = contextvars.copy_context().run
            thread = threading.Thread(
                target=serve, args=(self._serve, member), name=f"board {member.name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc_info) -> None:
        self._dealer.stop()
        self._go.set()
        interrupted = exc_info[0] is not None
        for thread in self._threads:  # an interrupted run does not wait long for a board that hangs
            thread.join(STOP_WAIT_SECONDS if interrupted else None)

    def _serve(self, member: FleetMember) -> None:
        end = self.ends[member.name]
        stage = "starting"  # then "running", then "ended" once its last result is in (before the board stops)
        try:
            with member.driver.session() as client:
                end.info, end.firmware = client.info, client.firmware
                end.port = getattr(client.port, "port", None)
                stage = "running"
                self._messages.put(("ready", member.name, client.info))
                self._go.wait()
                try:
                    self._run(member, client, end)
                    self._make_last_request(client)
                finally:
                    end.stats = vars(client.stats).copy()
                stage = "ended"
                self._messages.put(("ended", member.name, None))
        except BOARD_FAILURES as exc:
            if stage == "ended":
                return  # stopping the board failed after its work was done: nothing is lost
            self._dealer.give_back(member.name)
            end.failure = str(exc) or type(exc).__name__
            if isinstance(exc, BoardChanged):
                end.retired = (exc.expected, exc.said)
            self._messages.put(("failed", member.name, exc) if stage == "running" else ("error", member.name, exc))
        except BaseException as exc:  # anything else stops the run: the caller raises it
            self._dealer.give_back(member.name)
            if stage != "ended":
                self._messages.put(("error", member.name, exc))

    def _run(self, member: FleetMember, client: DeviceSession, end: BoardEnd) -> None:
        name, share = member.name, member.driver.share
        client.hands_on_loss = True
        while self._dealer.more_work():
            sent: deque[int] = deque()  # taken, in order: results come in the order inputs went
            try:
                for answer in client.run_stream(self._inputs(name, sent, share)):
                    index = sent.popleft()
                    result = _finished(share, self._tensors[index], answer)
                    self._messages.put(
                        ("arrival", name, Arrival(name, index, result, client.last_invoke, client.last_device_window))
                    )
                    self._dealer.done(name, index)
                    end.samples += 1
            except BoardLost:
                # Its samples wait for the others now, not once it is back or given up on.
                self._dealer.give_back(name)
                require(client, Recovery).reconnect(self._dealer.unfinished)

    def _make_last_request(self, client: DeviceSession) -> None:
        if self._last is None or not self._last_taken.acquire(blocking=False):
            return  # none asked, or another board makes it
        self.last_answer = self._last(client)

    def _inputs(self, name: str, sent: deque[int], share: DeviceShare | None) -> Iterator[bytes]:
        """The board's inputs while samples wait; it ends when none waits (the board then finishes what it
        has in flight before it asks again: waiting here would hold up its own last result)."""
        while (index := self._dealer.take(name)) is not None:
            sent.append(index)
            yield device_bytes(share, self._tensors[index])

    def ready(self) -> dict[str, DeviceInfo]:
        """Every board's hello, in the fleet's order; a board that did not start stops the run with its error."""
        infos: dict[str, DeviceInfo] = {}
        while len(infos) < len(self._members):
            kind, name, payload = self._messages.get()
            if kind == "error":
                raise _naming(payload, name, len(self._members))
            infos[name] = payload
        return {m.name: infos[m.name] for m in self._members}

    def go(self) -> None:
        self._go.set()

    def arrivals(self) -> Iterator[Arrival]:
        """Results as they arrive, until every sample has one. When no board is left, the last failure."""
        running = len(self._members)
        last_failure: tuple[str, Exception] | None = None
        while running:
            kind, name, payload = self._get()
            if kind == "arrival":
                yield payload
            elif kind == "error":
                raise _naming(payload, name, len(self._members))
            else:
                running -= 1
                last_failure = (name, payload) if kind == "failed" else last_failure
        if self._dealer.left and last_failure is not None:
            name, failure = last_failure
            raise _naming(failure, name, len(self._members))

    def _get(self):
        while True:  # a timeout keeps the wait interruptible by Ctrl-C
            try:
                return self._messages.get(timeout=0.5)
            except queue.Empty:
                continue


def _naming(exc: BaseException, board: str, boards: int) -> BaseException:
    """With several boards, an error says which board it came from."""
    if boards == 1 or not isinstance(exc, BOARD_FAILURES):
        return exc
    named = LinkError(f"board {board}: {exc}")
    named.__cause__ = exc
    return named
