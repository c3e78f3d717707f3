"""`--labgrid-tags`: labgrid places reserved by tag, as `labgrid-client reserve` does, for the run's boards;
kept alive while the run goes on and cancelled when it ends (by the guard if harness is killed)."""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from harness.device.labgrid_adapter import labgrid
from harness.device.labgrid_place import Guard, release, release_or_raise
from harness.device.labgrid_session import CONNECT_SECONDS, POLL_SECONDS, WAIT_ENV, CoordinatorSession, wait_seconds
from harness.errors import LinkError, UserError

KEEPALIVE_SECONDS = 20  # the coordinator drops a reservation not polled (or acquired) for 60 s


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
    with CoordinatorSession() as session:
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

        guard = Guard(user)
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
    release_or_raise([], user, tokens)
    guard.done()


def _checked_tags(session: CoordinatorSession, tags: dict[str, str]) -> dict[str, str]:
    if not tags:
        raise UserError("reserve labgrid places by at least one tag, e.g. board=nucleo_h743")
    for key, value in tags.items():
        if not session.TAG_KEY.match(key) or not session.TAG_VAL.match(str(value)):  # as labgrid checks them
            raise UserError(f"labgrid tag {key}={value} is not valid: a key starts with a-z (then a-z, 0-9, _)")
    return {key: str(value) for key, value in tags.items()}


def _tag_text(tags: dict[str, str]) -> str:
    return " ".join(f"{key}={value}" for key, value in tags.items())


def _allocated(tokens: list[str], tags: dict[str, str], matching: list[str], wait: float) -> list[str]:
    lg = labgrid()
    (channel, stub), pb2, grpc = lg.stub(), lg.pb2, lg.grpc
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
    lg = labgrid()
    (channel, stub), pb2, grpc = lg.stub(), lg.pb2, lg.grpc
    with channel:
        while not stop.wait(KEEPALIVE_SECONDS):
            for token in tokens:
                with suppress(grpc.RpcError):
                    stub.PollReservation(pb2.PollReservationRequest(token=token), timeout=CONNECT_SECONDS)
