"""`--labgrid-place NAME`: a board in a labgrid farm, through labgrid's gRPC coordinator (LG_COORDINATOR).

harness acquires the place as `host/user` (labgrid's LG_HOSTNAME and LG_USERNAME), reads its serial port
(a NetworkSerialPort: the exporter's ser2net, RFC 2217) and releases the place when the command ends. A
guard process (harness/device/labgrid_guard.py) holds a pipe from harness and releases the place if harness
dies without doing so. A place someone else holds is waited for, up to HARNESS_LABGRID_WAIT_SECONDS
(harness/device/labgrid_session.py). Reservations by tag: harness/device/labgrid_reserve.py. labgrid is
imported only in harness/device/labgrid_adapter.py."""

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress

from harness.device import labgrid_claims
from harness.device.labgrid_adapter import labgrid
from harness.device.labgrid_address import coordinator_address
from harness.device.labgrid_session import CONNECT_SECONDS, CoordinatorSession, wait_seconds
from harness.errors import LinkError, UserError

RELEASED = b"released\n"  # what harness tells its guard when it has released everything itself


def release(places: list[str], user: str, tokens: list[str] = ()) -> list[str]:
    """Release the places if `user` still holds them and cancel the reservations; the calls need no
    session (the guard makes them too). Returns what failed, one line each."""
    lg = labgrid()
    (channel, stub), pb2, grpc = lg.stub(), lg.pb2, lg.grpc
    failed = []
    with channel:
        for place in places:
            try:
                stub.ReleasePlace(pb2.ReleasePlaceRequest(placename=place, fromuser=user), timeout=CONNECT_SECONDS)
            except grpc.RpcError as exc:
                failed.append(f"release {place}: {exc.details() if hasattr(exc, 'details') else exc}")
        for token in tokens:
            try:
                stub.CancelReservation(pb2.CancelReservationRequest(token=token), timeout=CONNECT_SECONDS)
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.FAILED_PRECONDITION:  # gone already (expired)
                    failed.append(f"cancel reservation {token}: {exc.details()}")
    return failed


class Guard:
    """`python -m harness.device.labgrid_guard`, in a session of its own (Ctrl-C does not reach it), told over
    a pipe what to undo: each place before harness tries to acquire it, each reservation as it is made.
    When the pipe closes without RELEASED, harness died, and the guard releases and cancels them."""

    def __init__(self, user: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.device.labgrid_guard", "--user", user],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "LG_COORDINATOR": coordinator_address()},
        )

    def _say(self, line: str) -> None:
        with suppress(OSError):
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()

    def place(self, name: str) -> None:
        self._say(f"place {name}")

    def token(self, token: str) -> None:
        self._say(f"token {token}")

    def done(self) -> None:
        """harness released everything itself (or holds nothing): the guard ends without a call."""
        with suppress(OSError):
            self.proc.stdin.write(RELEASED)
            self.proc.stdin.close()
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)


def release_or_raise(places: list[str], user: str, tokens: list[str] = ()) -> None:
    failed = release(places, user, tokens)
    if failed:
        raise LinkError(f"the labgrid coordinator at {coordinator_address()}: {'; '.join(failed)}")


@contextmanager
def labgrid_port(place: str) -> Iterator[str]:
    """The pyserial URL of the place's serial port, with the place acquired for the block (and released
    after it however the block ends: on an exception, Ctrl-C, or by the guard if harness is killed)."""
    guard = None
    with ExitStack() as record, CoordinatorSession() as session:
        user = session.name
        recorded = []

        def before_acquire() -> None:
            # The guard knows the place, and the record is held, before the acquire is asked for: harness
            # killed at any moment after leaves nothing held (the guard's release only takes the place from
            # this user), and harness killed with its guard leaves a record that says so.
            nonlocal guard
            guard = guard or Guard(user)
            guard.place(place)
            if not recorded:
                recorded.append(record.enter_context(labgrid_claims.claimed(place)))

        try:
            if not session.run(session.acquire(place, wait_seconds(), before_acquire)):
                if guard:
                    guard.done()  # another process of this user acquired it meanwhile: theirs to release
                    guard = None
                record.close()
            url = session.run(session.serial_url(place))
        except BaseException:
            _release_quietly(guard, place, user)
            raise
        record = record.pop_all()
    with record:
        try:
            yield url
        except BaseException:
            _release_quietly(guard, place, user)
            raise
        if guard:
            release_or_raise([place], user)
            guard.done()


def release_by_hand(name: str) -> str | None:
    """`harness farm release NAME`: release the place if this host/user holds it and no live harness uses it
    (one a killed harness left acquired, or one acquired with labgrid-client). Returns the host/user it was
    released from; None: it was not acquired."""
    with CoordinatorSession() as session:
        place = session.place(name)
        if not place.acquired:
            labgrid_claims.forget(name)
            return None
        if place.acquired != session.name:
            raise UserError(
                f"labgrid place {name} is held by {place.acquired}, not by {session.name}: harness releases only "
                f"this user's places; ask them, or take it from them with `labgrid-client -p {name} release --kick`"
            )
        if running := labgrid_claims.live_holder(name):
            raise UserError(
                f"labgrid place {name} is in use by a harness still running ({running}): stop it (it releases "
                "the place as it ends), or wait for it"
            )
        session.run(session.release_ours(name))
        return session.name


def _release_quietly(guard: Guard | None, place: str, user: str) -> None:
    """On the way out with an error already: release, and if that fails too, leave it to the guard."""
    if guard and not release([place], user):
        guard.done()
