"""A session with labgrid's gRPC coordinator (LG_COORDINATOR), as `host/user` (labgrid's LG_HOSTNAME and
LG_USERNAME): finds a place, tells who holds it, acquires it (waiting up to HARNESS_LABGRID_WAIT_SECONDS for
someone else to release it) and reads its serial port. labgrid itself comes through
harness/device/labgrid_adapter.py."""

import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress

from harness import console
from harness.device import labgrid_claims
from harness.device.labgrid_adapter import labgrid
from harness.errors import DeviceNotFound, LinkError, UserError, setting

WAIT_SECONDS = 300  # a place or reservation someone else holds: how long harness waits for it
WAIT_ENV = "HARNESS_LABGRID_WAIT_SECONDS"
CONNECT_SECONDS = 10  # reaching the coordinator, and each call to it
PORT_SECONDS = 20  # after the acquire, the exporter starts ser2net and publishes its port
POLL_SECONDS = 0.2
BROKEN = "<broken>"  # who holds a resource its exporter marked broken (labgrid/remote/exporter.py)


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


class CoordinatorSession:
    """A labgrid ClientSession on a private event loop, for the calls that need one (acquire, reserve:
    the coordinator names the caller by its session). The session sees place and resource updates
    only while the loop runs: it is used for one step, then closed."""

    def __init__(self):
        lg = labgrid()
        self.grpc, self.pb2, self.TAG_KEY, self.TAG_VAL = lg.grpc, lg.pb2, lg.TAG_KEY, lg.TAG_VAL
        ClientSession = lg.ClientSession
        self.address = lg.grpc_address()
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
