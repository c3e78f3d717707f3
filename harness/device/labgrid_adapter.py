"""The one module that imports labgrid: its version gate, and the parts of labgrid harness uses.

labgrid has no stable Python API beside `labgrid-client`; harness uses what labgrid-client itself is built
on, and only this much of it:
- `labgrid.remote.client.ClientSession`: start, stop, close, `stopping`, `places`, `resources`, `stub`,
  `sync_with_coordinator`, `gethostname`, `getuser` (a place: name, acquired, reservation, tags, matches,
  hasmatch; a resource entry: cls, acquired, avail, params, extra);
- `labgrid.remote.common.TAG_KEY`, `TAG_VAL` (how labgrid checks a tag);
- `labgrid.remote.generated.labgrid_coordinator_pb2` and `_pb2_grpc` (the coordinator's gRPC messages and
  stub: AcquirePlace, ReleasePlace, CreateReservation, PollReservation, CancelReservation, GetPlaces,
  GetReservations);
- `labgrid.util.proxy.proxymanager.get_grpc_address` (LG_COORDINATOR as gRPC dials it).
These move between labgrid releases, so harness takes only the labgrid versions it is tested with
(TESTED_LABGRID, the same range as pyproject.toml's `farm` extra; tests/unit/device/test_labgrid_adapter.py
checks both): another version is refused on first use with one line naming the range to install."""

import logging
import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

from harness.device.labgrid_address import COORDINATOR_PORT, coordinator_address
from harness.errors import UserError, setting
from harness.extras import require

TESTED_LABGRID = ">=26.0,<27"  # labgrid's yearly releases and their bug-fix releases: 26.0.1 is tested


@dataclass(frozen=True)
class Labgrid:
    """labgrid's modules harness uses, loaded once the installed version is one harness is tested with."""

    grpc: ModuleType
    ClientSession: type
    TAG_KEY: object  # compiled patterns
    TAG_VAL: object
    pb2: ModuleType
    pb2_grpc: ModuleType
    proxymanager: object

    def grpc_address(self) -> str:
        """LG_COORDINATOR as gRPC dials it (labgrid's proxy settings applied)."""
        return self.proxymanager.get_grpc_address(coordinator_address(), default_port=COORDINATOR_PORT)

    def stub(self):
        """A channel to the coordinator (close it: `with channel:`) and its stub, for the calls that need no session."""
        channel = self.grpc.insecure_channel(self.grpc_address())
        return channel, self.pb2_grpc.CoordinatorStub(channel)


_loaded: Labgrid | None = None


def installed_version() -> str | None:
    try:
        return version("labgrid")
    except PackageNotFoundError:
        return None


def check_version(purpose: str) -> None:
    """One line if the installed labgrid is not one harness is tested with (a missing one: require's line)."""
    installed = installed_version()
    if installed is None:
        require("labgrid", purpose)  # not installed: the line naming the extra
        return
    specifiers = require("packaging.specifiers", purpose)
    if not specifiers.SpecifierSet(TESTED_LABGRID).contains(installed, prereleases=True):
        raise UserError(
            f"{purpose} needs labgrid{TESTED_LABGRID}, the versions harness is tested with; labgrid {installed} is "
            f'installed: pip install "labgrid{TESTED_LABGRID}"'
        )


def quiet_grpc_forks() -> None:
    """Before gRPC is first imported (it reads this once): harness forks only to exec a board process, or for an
    arena probe that never calls gRPC, and gRPC's fork handlers would log "Other threads are currently calling
    into gRPC, skipping fork() handlers" on stderr at each such fork while a labgrid channel is busy."""
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")


def labgrid() -> Labgrid:
    """labgrid's modules, after the version gate (once per process)."""
    global _loaded
    if _loaded is None:
        purpose = setting("labgrid_place")
        check_version(purpose)
        quiet_grpc_forks()
        common = require("labgrid.remote.common", purpose)
        loaded = Labgrid(
            grpc=require("grpc", purpose),
            ClientSession=require("labgrid.remote.client", purpose).ClientSession,
            TAG_KEY=common.TAG_KEY,
            TAG_VAL=common.TAG_VAL,
            pb2=require("labgrid.remote.generated.labgrid_coordinator_pb2", purpose),
            pb2_grpc=require("labgrid.remote.generated.labgrid_coordinator_pb2_grpc", purpose),
            proxymanager=require("labgrid.util.proxy", purpose).proxymanager,
        )
        _loaded = loaded
    root = logging.getLogger()
    if not root.handlers:  # labgrid logs its connection trouble on the root logger; harness words the error
        root.addHandler(logging.NullHandler())
    return _loaded
