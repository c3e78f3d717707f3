"""The boards one run uses: one board, or several of one kind sharing the run's samples
(harness/device/sharding.py deals them out).

Several boards come from several real ports (`--port A,B`), USB serial numbers (`--serial X,Y`), labgrid
places (`--labgrid-place P,Q`), a labgrid reservation by tag (`--labgrid-tags board=… --boards N`), or,
for the boards harness starts itself (virtual, QEMU, hosted), `--boards N` copies of the board. Each
member is a driver of its own with the connection options of its one board, and a name the run's results
give each sample it ran (the port, serial number or place; `sim#2` for the second started board).
"""

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from harness.boards import Board
from harness.device.drivers import DRIVERS, ConnectOptions, Driver, driver_for, driver_type
from harness.device.labgrid_address import coordinator_address
from harness.errors import UserError, setting
from harness.model.tflite_file import TfliteModel
from harness.values import name_list, tag_filter


@dataclass(frozen=True)
class FleetMember:
    name: str  # how the run's results name this board
    driver: Driver


@dataclass(frozen=True)
class FleetRequest:
    """What the command line asked for: one of the ways of naming several boards, or a count."""

    count: int = 1
    labgrid_tags: str | None = None


def _named(options: ConnectOptions) -> tuple[str, list[str]] | None:
    """The one option naming several boards, with its names; None: no option names more than one."""
    lists = {
        "port": name_list(options.port),
        "serial": name_list(options.serial_number),
        "labgrid_place": name_list(options.labgrid_place),
    }
    several = {name: values for name, values in lists.items() if len(values) > 1}
    if len(several) > 1:
        first, second = (setting(name) for name in several)
        raise UserError(f"name several boards one way: {first} or {second}, not both")
    return next(iter(several.items()), None)


_OPTION_FIELD = {"port": "port", "serial": "serial_number", "labgrid_place": "labgrid_place"}


def check_fleet(board: Board, options: ConnectOptions, request: FleetRequest) -> int:
    """How many boards the run uses; refused, before anything starts, a set of boards that cannot be had."""
    named = _named(options)
    if request.labgrid_tags is not None or options.labgrid_place:
        coordinator_address()  # a malformed LG_COORDINATOR is refused before a run folder exists
    if request.labgrid_tags is not None:
        if options.labgrid_place or options.port not in (None, "auto") or options.serial_number:
            raise UserError(
                f"{setting('labgrid_tags')} reserves the places itself: drop {setting('labgrid_place')}, "
                f"{setting('port')} and {setting('serial')}"
            )
        DRIVERS["labgrid"].refuse_board(board, "labgrid_tags")
        return request.count
    if named is not None:
        option, names = named
        if request.count not in (1, len(names)):
            raise UserError(
                f"{setting('boards')} {request.count} with {len(names)} boards named by {setting(option)}: "
                f"drop {setting('boards')}"
            )
        if len(set(names)) != len(names):
            raise UserError(f"{setting(option)} names a board twice: name each board once")
        return len(names)
    if request.count > 1 and driver_type(board, options.labgrid_place).takes_port:
        raise UserError(
            f"{setting('boards')} {request.count} starts boards harness runs itself; {board.id} is a real board: "
            f"name each with {setting('port')} A,B, {setting('serial')}, {setting('labgrid_place')} or "
            f"reserve them with {setting('labgrid_tags')}"
        )
    if request.count > 1 and options.labgrid_place:
        raise UserError(f"{setting('boards')} with one {setting('labgrid_place')}: name each place, comma-separated")
    return request.count


def _members(board: Board, model: TfliteModel | None, options: ConnectOptions, request: FleetRequest):
    named = _named(options)
    if named is not None:
        option, names = named
        field = _OPTION_FIELD[option]
        return [
            FleetMember(name, driver_for(board, model, dataclasses.replace(options, **{field: name}))) for name in names
        ]
    if request.count == 1:
        name = options.labgrid_place or (options.port if options.port not in (None, "auto") else None)
        return [FleetMember(name or options.serial_number or board.id, driver_for(board, model, options))]
    return [FleetMember(f"{board.id}#{k}", driver_for(board, model, options)) for k in range(1, request.count + 1)]


@contextmanager
def board_fleet(
    board: Board, model: TfliteModel | None, options: ConnectOptions, request: FleetRequest
) -> Iterator[list[FleetMember]]:
    """The run's boards, each with its driver checked (nothing started yet), for the block; a labgrid
    reservation by tag is held for the block and cancelled after."""
    check_fleet(board, options, request)
    if request.labgrid_tags is None:
        yield _members(board, model, options, request)
        return
    from harness.device.labgrid_reserve import reserved_places

    with reserved_places(tag_filter(request.labgrid_tags), request.count) as places:
        yield [
            FleetMember(place, driver_for(board, model, dataclasses.replace(options, labgrid_place=place)))
            for place in places
        ]
