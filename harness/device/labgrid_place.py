"""`--labgrid-place NAME`: a board in a labgrid farm, through labgrid's gRPC coordinator (LG_COORDINATOR).

harness acquires the place as `host/user` (labgrid's LG_HOSTNAME and LG_USERNAME), reads its serial port
(a NetworkSerialPort: the exporter's ser2net, RFC 2217) and releases the place when the command ends. A
guard process (harness/device/labgrid_guard.py) holds a pipe from harness and releases the place if harness
dies without doing so. A place someone else holds is waited for, up to HARNESS_LABGRID_WAIT_SECONDS.
`reserved_places` reserves places by tag, as `labgrid-client reserve` does. labgrid is imported only here
and in the guard."""

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress

from harness import console
from harness.device import labgrid_claims
from harness.device.labgrid_address import COORDINATOR_PORT, coordinator_address
from harness.errors import DeviceNotFound, LinkError, UserError, setting
from harness.extras import require

WAIT_SECONDS = 300  # a place or reservation someone else holds: how long harness waits for it
WAIT_ENV = "HARNESS_LABGRID_WAIT_SECONDS"
CONNECT_SECONDS = 10  # reaching the coordinator, and each call to it
PORT_SECONDS = 20  # after the acquire, the exporter starts ser2net and publishes its port
POLL_SECONDS = 0.2
KEEPALIVE_SECONDS = 20  # the coordinator drops a reservation not polled (or acquired) for 60 s
RELEASED = b"released\n"  # what harness tells its guard when it has released everything itself
BROKEN = "<broken>"  # who holds a resource its exporter marked broken (labgrid/remote/exporter.py)


def _labgrid():
    purpose = setting("labgrid_place")
    grpc = require("grpc", purpose)
    ClientSession = require("labgrid.remote.client", purpose).ClientSession
    common = require("labgrid.remote.common", purpose)
    TAG_KEY, TAG_VAL = common.TAG_KEY, common.TAG_VAL
    pb2 = require("labgrid.remote.generated.labgrid_coordinator_pb2", purpose)
    pb2_grpc = require("labgrid.remote.generated.labgrid_coordinator_pb2_grpc", purpose)
    proxymanager = require("labgrid.util.proxy", purpose).proxymanager
    root = logging.getLogger()
    if not root.handlers:  # labgrid logs its connection trouble on the root logger; harness words the error
        root.addHandler(logging.NullHandler())
    return grpc, ClientSession, TAG_KEY, TAG_VAL, pb2, pb2_grpc, proxymanager


def wait_seconds() -> float:
    text = os.environ.get(WAIT_ENV)
    if text is None:
        return WAIT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise UserError(f"{WAIT_ENV}={text!r} is not a number of seconds: set it to e.g. 60, or unset it")
    return value


# One session at a time in this process: the coordinator tells clients apart by their TCP peer, and gRPC
# gives every channel of a process to one address the same connection, so a second concurrent session is
# refused. A sharded run's boards (threads) acquire their places one after another.
_ONE_SESSION = threading.Lock()


class _Session:
    """A labgrid ClientSession on a private event loop, for the calls that need one (acquire, reserve:
    the coordinator names the caller by its session). The session sees place and resource updates
    only while the loop runs: it is used for one step, then closed."""

    def __init__(self):
        self.grpc, ClientSession, self.TAG_KEY, self.TAG_VAL, self.pb2, _, proxymanager = _labgrid()
        self.address = _grpc_address(proxymanager)
        self.loop = asyncio.new_event_loop()

        async def start():
            session = ClientSession(self.address, asyncio.get_running_loop())
            try:
                await asyncio.wait_for(session.start(), CONNECT_SECONDS)
            except BaseException:
                await _stopped(session)
                raise
            return session

        _ONE_SESSION.acquire()
        try:
            self.session = self.loop.run_until_complete(start())
        except BaseException as exc:
            self.loop.close()
            _ONE_SESSION.release()
            if not isinstance(exc, Exception):
                raise
            raise LinkError(
                f"cannot reach the labgrid coordinator at {self.address} ({_detail(exc)}); start it, or point "
                "LG_COORDINATOR at it"
            ) from None
        self.name = f"{self.session.gethostname()}/{self.session.getuser()}"

    def run(self, coroutine):
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        try:
            with suppress(Exception):
                self.run(_stopped(self.session))
            self.loop.close()
        finally:
            _ONE_SESSION.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def place(self, name: str):
        place = self.session.places.get(name)
        if place is None:
            known = ", ".join(sorted(self.session.places)) or "none"
            raise DeviceNotFound(
                f"the labgrid coordinator at {self.address} has no place {name!r} (places: {known}); pick one "
                f"for {setting('labgrid_place')} or create it with `labgrid-client -p {name} create`"
            )
        return place

    async def holder(self, place) -> str | None:
        """Who keeps the place from us: the user holding it, a live harness of ours using it, the owner of a
        reservation on it, or the holder of another place that has one of its resources."""
        if place.acquired and place.acquired != self.name:
            return place.acquired
        if place.acquired and (running := labgrid_claims.live_holder(place.name)):
            return f"{self.name} (a harness still running: {running})"
        if place.reservation:
            owner = await self._reservation_owner(place.reservation)
            if owner and owner != self.name:
                return f"{owner} (reservation {place.reservation})"
        for path, entry in self._resources(place):
            if entry.acquired not in (None, BROKEN, place.name):
                other = self.session.places.get(entry.acquired)
                user = other.acquired if other and other.acquired else "someone"
                return f"{user}, through place {entry.acquired} (it matches {'/'.join(path)} too)"
        return None

    def refuse_unusable(self, place) -> None:
        """A place with no serial port, or with a resource its exporter marked broken, is refused at once:
        waiting would not change it."""
        broken = [(path, entry) for path, entry in self._resources(place) if entry.acquired == BROKEN]
        if broken:
            path, entry = broken[0]
            reason = entry.extra.get("broken") or "broken"
            raise LinkError(
                f"labgrid place {place.name}: its exporter marked {'/'.join(path)} broken ({reason}), so the "
                f"place cannot be acquired; restart the exporter {path[0]} once the cause is fixed (labgrid keeps "
                f"a resource broken until then), or pick another place for {setting('labgrid_place')}"
            )
        if not self._serial_ports(place):
            patterns = ", ".join(repr(match) for match in place.matches) or "none"
            raise UserError(
                f"labgrid place {place.name} has no serial port: none of its matches ({patterns}) names a "
                "NetworkSerialPort the coordinator knows; add one (`labgrid-client -p "
                f"{place.name} add-match EXPORTER/GROUP/NetworkSerialPort`), or check that its exporter runs"
            )

    async def release_left_behind(self, name: str, process: str) -> None:
        """Release the place a killed harness of ours left acquired, with a notice."""
        await self.release_ours(name, f"was left acquired by a harness that no longer runs ({process}), and ")
        print(
            f"harness: labgrid place {name} was left acquired by a harness that no longer runs ({process}, as "
            f"{self.name}); released it",
            file=sys.stderr,
        )

    async def release_ours(self, name: str, why: str = "") -> None:
        """Release the place from this host/user, and forget its record."""
        try:
            await self.session.stub.ReleasePlace(
                self.pb2.ReleasePlaceRequest(placename=name, fromuser=self.name), timeout=CONNECT_SECONDS
            )
        except self.grpc.aio.AioRpcError as exc:
            raise LinkError(
                f"labgrid place {name} {why}the coordinator at {self.address} refused to release it: {exc.details()}"
            ) from None
        await self.session.sync_with_coordinator()
        labgrid_claims.forget(name)

    async def _reservation_owner(self, token: str) -> str | None:
        try:
            response = await self.session.stub.GetReservations(
                self.pb2.GetReservationsRequest(), timeout=CONNECT_SECONDS
            )
        except self.grpc.aio.AioRpcError:
            return None
        return next((r.owner for r in response.reservations if r.token == token), None)

    async def acquire(self, name: str, wait: float, before: Callable[[], None]) -> bool:
        """Acquire the place, waiting up to `wait` seconds while someone else holds it; `before()` is called
        just before harness asks for it. False: the place was ours already (acquired with labgrid-client, as
        labgrid's tools expect): harness uses it and leaves it acquired. One a killed harness of ours left
        acquired is released first."""
        deadline = time.monotonic() + wait
        told = wait == 0  # a notice on its own line, once, when harness starts to wait
        while True:
            place = self.place(name)
            if place.acquired == self.name and not labgrid_claims.live_holder(name):
                if process := labgrid_claims.left_behind(name):
                    await self.release_left_behind(name, process)
                    continue
                return False
            self.refuse_unusable(place)
            holder = await self.holder(place)
            if holder is None:
                try:
                    before()
                    await self.session.stub.AcquirePlace(
                        self.pb2.AcquirePlaceRequest(placename=name), timeout=CONNECT_SECONDS
                    )
                    await self.session.sync_with_coordinator()
                    return True
                except self.grpc.aio.AioRpcError as exc:
                    if exc.code() not in (
                        self.grpc.StatusCode.FAILED_PRECONDITION,
                        self.grpc.StatusCode.PERMISSION_DENIED,
                    ):
                        raise LinkError(f"the labgrid coordinator refused to acquire {name}: {exc.details()}") from None
                    # taken between our look and our call, or a resource broke as the exporter started it
                    await self.session.sync_with_coordinator()
                    place = self.place(name)
                    self.refuse_unusable(place)
                    holder = await self.holder(place) or "another user"
            if time.monotonic() >= deadline:
                raise LinkError(
                    f"labgrid place {name} is held by {holder}: still after {wait:g} s; wait for them to release it, "
                    f"pick another place for {setting('labgrid_place')}, or set {WAIT_ENV} to wait longer"
                )
            if not told:
                told = True
                if not console.is_quiet():
                    print(
                        f"harness: waiting for labgrid place {name}, held by {holder} (up to {wait:g} s)",
                        file=sys.stderr,
                    )
            await asyncio.sleep(POLL_SECONDS)

    async def serial_url(self, name: str) -> str:
        """The pyserial URL of the acquired place's serial port, once its exporter serves it."""
        deadline = time.monotonic() + PORT_SECONDS
        while True:
            ports = self._serial_ports(self.place(name))
            ready = [entry for entry in ports if entry.avail and entry.params.get("port")]
            if ready:
                entry = ready[0]
                where = f"{entry.params['host']}:{entry.params['port']}"
                if entry.params.get("protocol") == "raw":
                    return f"socket://{where}"
                # As labgrid's own SerialDriver: ser2net does not answer SET_CONTROL (DTR, RTS) for every
                # device (a pseudo-terminal has no modem lines), and pyserial would wait for the answer.
                return f"rfc2217://{where}?ign_set_control"
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(POLL_SECONDS)
        if not ports:
            raise UserError(
                f"labgrid place {name} has no serial port (NetworkSerialPort): add a match for its exporter's "
                f"RawSerialPort or USBSerialPort (`labgrid-client -p {name} add-match EXPORTER/GROUP/*`)"
            )
        raise LinkError(
            f"labgrid place {name}'s serial port is not available after {PORT_SECONDS} s: check that its exporter "
            "runs and that the board is attached"
        )

    def _serial_ports(self, place) -> list:
        return [entry for _, entry in self._resources(place) if entry.cls == "NetworkSerialPort"]

    def _resources(self, place) -> list[tuple[tuple[str, str, str, str], object]]:
        """(exporter, group, class, name) and entry of every resource the coordinator knows that the place matches."""
        found = []
        for exporter, groups in sorted(self.session.resources.items()):
            for group_name, group in sorted(groups.items()):
                for resource_name, entry in sorted(group.items()):
                    path = (exporter, group_name, entry.cls, resource_name)
                    if place.hasmatch(path):
                        found.append((path, entry))
        return found


async def _stopped(session) -> None:
    session.stopping.set()
    with suppress(Exception):
        await session.stop()
    with suppress(Exception):
        await session.close()


def _detail(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return f"no answer within {CONNECT_SECONDS} s"
    return str(exc).removeprefix("Error: ") or type(exc).__name__


def _grpc_address(proxymanager) -> str:
    """LG_COORDINATOR as gRPC dials it (labgrid's proxy settings applied)."""
    return proxymanager.get_grpc_address(coordinator_address(), default_port=COORDINATOR_PORT)


def _stub():
    grpc, _, _, _, pb2, pb2_grpc, proxymanager = _labgrid()
    channel = grpc.insecure_channel(_grpc_address(proxymanager))
    return channel, pb2_grpc.CoordinatorStub(channel), pb2, grpc


def release(places: list[str], user: str, tokens: list[str] = ()) -> list[str]:
    """Release the places if `user` still holds them and cancel the reservations; the calls need no
    session (the guard makes them too). Returns what failed, one line each."""
    channel, stub, pb2, grpc = _stub()
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


class _Guard:
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


def _release_or_raise(places: list[str], user: str, tokens: list[str] = ()) -> None:
    failed = release(places, user, tokens)
    if failed:
        raise LinkError(f"the labgrid coordinator at {coordinator_address()}: {'; '.join(failed)}")


@contextmanager
def labgrid_port(place: str) -> Iterator[str]:
    """The pyserial URL of the place's serial port, with the place acquired for the block (and released
    after it however the block ends: on an exception, Ctrl-C, or by the guard if harness is killed)."""
    guard = None
    with ExitStack() as record, _Session() as session:
        user = session.name
        recorded = []

        def before_acquire() -> None:
            # The guard knows the place, and the record is held, before the acquire is asked for: harness
            # killed at any moment after leaves nothing held (the guard's release only takes the place from
            # this user), and harness killed with its guard leaves a record that says so.
            nonlocal guard
            guard = guard or _Guard(user)
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
            _release_or_raise([place], user)
            guard.done()


def release_by_hand(name: str) -> str | None:
    """`harness farm release NAME`: release the place if this host/user holds it and no live harness uses it
    (one a killed harness left acquired, or one acquired with labgrid-client). Returns the host/user it was
    released from; None: it was not acquired."""
    with _Session() as session:
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


def _release_quietly(guard: _Guard | None, place: str, user: str) -> None:
    """On the way out with an error already: release, and if that fails too, leave it to the guard."""
    if guard and not release([place], user):
        guard.done()


@contextmanager
def reserved_places(tags: dict[str, str], count: int = 1, wait: float | None = None) -> Iterator[list[str]]:
    """Reserve `count` places whose tags include `tags` (labgrid's reservations: one place each), waiting up
    to `wait` seconds (default HARNESS_LABGRID_WAIT_SECONDS) for them to be free; yields their names. The
    reservations belong to this host/user (LG_HOSTNAME, LG_USERNAME): `labgrid_port(name)` from this
    process or any other of the same user acquires them. They are cancelled when the block ends (by
    the guard if harness is killed) and kept alive meanwhile."""
    if count < 1:
        raise UserError(f"reserve at least one labgrid place, not {count}")
    wait = wait_seconds() if wait is None else wait
    tokens: list[str] = []
    guard = None
    with _Session() as session:
        wanted = _checked_tags(session, tags)
        matching = sorted(n for n, p in session.session.places.items() if wanted.items() <= p.tags.items())
        if len(matching) < count:
            raise UserError(
                f"{count} labgrid place(s) with {_tag_text(wanted)} wanted, the coordinator at {session.address} "
                f"has {len(matching)} ({', '.join(matching) or 'none'}); tag more with `labgrid-client -p NAME "
                "set-tags ...` or ask for fewer"
            )
        user = session.name
        request = session.pb2.CreateReservationRequest(filters={"main": session.pb2.Reservation.Filter(filter=wanted)})

        async def reserve():
            return await session.session.stub.CreateReservation(request, timeout=CONNECT_SECONDS)

        guard = _Guard(user)
        try:
            for _ in range(count):
                tokens.append(session.run(reserve()).reservation.token)
                guard.token(tokens[-1])
        except BaseException as exc:
            if not release([], user, tokens):
                guard.done()
            if isinstance(exc, session.grpc.aio.AioRpcError):
                raise LinkError(
                    f"the labgrid coordinator refused a reservation for {_tag_text(wanted)}: {exc.details()}"
                ) from None
            raise
    stop = threading.Event()
    try:
        places = _allocated(tokens, wanted, matching, wait)
        keepalive = threading.Thread(target=_keep_alive, args=(tokens, stop), daemon=True)
        keepalive.start()
        yield places
    except BaseException:
        stop.set()
        if not release([], user, tokens):
            guard.done()
        raise
    stop.set()
    _release_or_raise([], user, tokens)
    guard.done()


def _checked_tags(session: _Session, tags: dict[str, str]) -> dict[str, str]:
    if not tags:
        raise UserError("reserve labgrid places by at least one tag, e.g. board=nucleo_h743")
    for key, value in tags.items():
        if not session.TAG_KEY.match(key) or not session.TAG_VAL.match(str(value)):  # as labgrid checks them
            raise UserError(f"labgrid tag {key}={value} is not valid: a key starts with a-z (then a-z, 0-9, _)")
    return {key: str(value) for key, value in tags.items()}


def _tag_text(tags: dict[str, str]) -> str:
    return " ".join(f"{key}={value}" for key, value in tags.items())


def _allocated(tokens: list[str], tags: dict[str, str], matching: list[str], wait: float) -> list[str]:
    channel, stub, pb2, grpc = _stub()
    deadline = time.monotonic() + wait
    with channel:
        while True:
            places, waiting = [], 0
            for token in tokens:
                try:
                    res = stub.PollReservation(pb2.PollReservationRequest(token=token), timeout=CONNECT_SECONDS)
                except grpc.RpcError as exc:
                    raise LinkError(f"labgrid reservation {token} failed: {exc.details()}") from None
                res = res.reservation
                if res.state == 0:  # waiting
                    waiting += 1
                elif res.state in (1, 2):  # allocated, acquired
                    places.append(res.allocations["main"])
                else:
                    raise LinkError(
                        f"labgrid reservation {token} for {_tag_text(tags)} ended before harness got its place; "
                        "run again"
                    )
            if not waiting:
                return places
            if time.monotonic() >= deadline:
                holders = _holders(stub, pb2, matching, grpc)
                raise LinkError(
                    f"{waiting} of {len(tokens)} labgrid place(s) with {_tag_text(tags)} still taken after {wait:g} s "
                    f"({holders}); wait for them, or set {WAIT_ENV} to wait longer"
                )
            time.sleep(POLL_SECONDS * 2)


def _holders(stub, pb2, names: list[str], grpc) -> str:
    try:
        places = stub.GetPlaces(pb2.GetPlacesRequest(), timeout=CONNECT_SECONDS).places
        reservations = stub.GetReservations(pb2.GetReservationsRequest(), timeout=CONNECT_SECONDS).reservations
    except grpc.RpcError:
        return "holders unknown"
    owners = {r.token: r.owner for r in reservations}
    held = []
    for place in places:
        if place.name not in names:
            continue
        if place.acquired:
            held.append(f"{place.name} held by {place.acquired}")
        elif place.reservation:
            held.append(f"{place.name} reserved by {owners.get(place.reservation, 'another user')}")
    return ", ".join(held) or "reserved by others ahead of harness"


def _keep_alive(tokens: list[str], stop: threading.Event) -> None:
    channel, stub, pb2, grpc = _stub()
    with channel:
        while not stop.wait(KEEPALIVE_SECONDS):
            for token in tokens:
                with suppress(grpc.RpcError):
                    stub.PollReservation(pb2.PollReservationRequest(token=token), timeout=CONNECT_SECONDS)
