"""A real labgrid farm on loopback for tests: a labgrid-coordinator, a labgrid-exporter serving pseudo-terminals
as RawSerialPort resources (through ser2net, RFC 2217), and places matching them.

    with labgrid_farm({"board-a": "/dev/pts/7"}, {"board-a": {"board": "sim_device"}}) as farm:
        env = farm.env  # LG_COORDINATOR set, for harness subprocesses

Each export is a place of the same name matching the exporter's group of that name (`127.0.0.1/NAME/*`). The
exporter starts ser2net as docs/farm.md advises, through scripts/exporter/ser2net (chardelay off), unless
stock_ser2net: then as labgrid alone does."""

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.device.labgrid_adapter import quiet_grpc_forks

BIN = Path(sys.executable).parent
EXPORTER_NAME = "127.0.0.1"
SER2NET_WRAPPER = Path(__file__).resolve().parents[1] / "scripts" / "exporter" / "ser2net"
START_SECONDS = 30


def _ser2net() -> str | None:
    return shutil.which("ser2net") or shutil.which("ser2net", path="/usr/sbin:/usr/local/sbin")


def missing() -> str | None:
    """Why a farm cannot start here, or None."""
    quiet_grpc_forks()  # this import is the test process's first of gRPC: as harness imports it
    try:
        import labgrid.remote.client  # noqa: F401
    except ImportError:
        return "needs labgrid (pip install labgrid, as scripts/install --test does)"
    if not (BIN / "labgrid-coordinator").exists() and not shutil.which("labgrid-coordinator"):
        return "needs the labgrid-coordinator command"
    if _ser2net() is None:
        return "needs ser2net (Debian ser2net, as scripts/install --test installs)"
    return None


needs_labgrid = pytest.mark.skipif(missing() is not None, reason=missing() or "")


def _command(name: str) -> str:
    return str(BIN / name) if (BIN / name).exists() else shutil.which(name)


@dataclass
class Farm:
    coordinator: str  # host:port, for LG_COORDINATOR
    state: Path  # the coordinator's working folder (places.yaml) and the logs
    places: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "LG_COORDINATOR": self.coordinator}

    def client(self, *args: str, user: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        """labgrid-client against this farm, as `user` (LG_USERNAME) when given."""
        env = self.env | ({"LG_USERNAME": user} if user else {})
        done = subprocess.run([_command("labgrid-client"), *args], env=env, capture_output=True, text=True, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"labgrid-client {' '.join(args)}: {done.stderr.strip()}")
        return done

    def call(self, coroutine_function):
        """Run `await coroutine_function(session)` on a labgrid ClientSession of this farm."""
        from labgrid.remote.client import ClientSession

        async def run():
            session = ClientSession(self.coordinator, asyncio.get_running_loop())
            await session.start()
            try:
                return await coroutine_function(session)
            finally:
                await session.stop()
                await session.close()

        return asyncio.run(run())

    def holder(self, place: str) -> str | None:
        async def look(session):
            return session.places[place].acquired

        return self.call(look)

    def reservations(self) -> list:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb2

        async def look(session):
            return list((await session.stub.GetReservations(pb2.GetReservationsRequest())).reservations)

        return self.call(look)

    def logs(self) -> str:
        return "\n".join(f"{name}: {_tail(self.state / name)}" for name in ("coordinator.log", "exporter.log"))

    def wait_released(self, place: str, seconds: float = 20) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.holder(place) is None:
                return True
            time.sleep(0.3)
        return False


def _read_line(proc: subprocess.Popen, prefix: str, log: Path, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(prefix):
                return line
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"{' '.join(map(str, proc.args[:1]))} did not print {prefix!r}: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def labgrid_farm(
    exports: dict[str, str], tags: dict[str, dict] | None = None, stock_ser2net: bool = False
) -> Iterator[Farm]:
    """Start a coordinator on a free loopback port (state in a fresh folder), an exporter serving each
    export (place name -> pseudo-terminal path) and one place per export with its tags; all stopped after."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    tags = tags or {}
    with tempfile.TemporaryDirectory(prefix="labgrid-farm-") as folder:
        state = Path(folder)
        procs: list[subprocess.Popen] = []
        try:
            log = state / "coordinator.log"
            coordinator = subprocess.Popen(
                [_command("labgrid-coordinator"), "--listen", "127.0.0.1:0"],
                cwd=state,
                stdout=log.open("w"),
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            procs.append(coordinator)
            address = _read_line(coordinator, "listening on ", log, START_SECONDS).removeprefix("listening on ")
            farm = Farm(address, state, list(exports))
            config = state / "exports.yaml"
            config.write_text(
                "".join(
                    f"{name}:\n  RawSerialPort:\n    port: {path}\n    speed: 115200\n"
                    for name, path in exports.items()
                )
            )
            exporter_env = {**farm.env, "PYTHONUNBUFFERED": "1"}
            ser2net_dir = Path(_ser2net()).parent if stock_ser2net else SER2NET_WRAPPER.parent
            exporter_env["PATH"] = f"{ser2net_dir}:{exporter_env.get('PATH', '')}"
            exporter_env["SER2NET"] = _ser2net()
            exporter = subprocess.Popen(
                [_command("labgrid-exporter"), "--name", EXPORTER_NAME, "--hostname", "127.0.0.1", str(config)],
                cwd=state,
                stdout=(state / "exporter.log").open("w"),
                stderr=subprocess.STDOUT,
                env=exporter_env,
            )
            procs.append(exporter)
            _set_up_places(farm, exports, tags, exporter)
            yield farm
        finally:
            for proc in reversed(procs):
                _stop(proc)


def _set_up_places(farm: Farm, exports: dict[str, str], tags: dict[str, dict], exporter) -> None:
    from labgrid.remote.generated import labgrid_coordinator_pb2 as pb2

    async def create(session):
        deadline = time.monotonic() + START_SECONDS
        while set(session.resources.get(EXPORTER_NAME, {})) < set(exports):
            if time.monotonic() > deadline or exporter.poll() is not None:
                raise RuntimeError(f"the exporter did not export {list(exports)}: {_tail(farm.state / 'exporter.log')}")
            await asyncio.sleep(0.1)
        for name in exports:
            await session.stub.AddPlace(pb2.AddPlaceRequest(name=name))
            await session.stub.AddPlaceMatch(
                pb2.AddPlaceMatchRequest(placename=name, pattern=f"{EXPORTER_NAME}/{name}/*")
            )
            place_tags = {key: str(value) for key, value in tags.get(name, {}).items()}
            if place_tags:
                await session.stub.SetPlaceTags(pb2.SetPlaceTagsRequest(placename=name, tags=place_tags))
        await session.sync_with_coordinator()

    farm.call(create)


@contextmanager
def ser2net_port(path: str, baud: int = 115200) -> Iterator[int]:
    """ser2net serving the device `path` over RFC 2217 on a free loopback port, as labgrid's exporter starts
    it; yields the port."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yaml = [
        f"connection: &con01#  accepter: telnet(rfc2217,mode=server),tcp,{port}",
        f"  connector: serialdev(nouucplock=true),{path},{baud}n81,local",
        "  options:",
        "    max-connections: 10",
    ]
    command = [_ser2net(), "-d", "-n", *[arg for line in yaml for arg in ("-Y", line)]]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _listening(port):  # not probed with a connection: ser2net would open the device for it
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"ser2net did not serve {path} on port {port}")
            time.sleep(0.05)
        yield port
    finally:
        _stop(proc)


def _listening(port: int) -> bool:
    """A TCP port in LISTEN state (IPv4 or IPv6: ser2net listens on both), as /proc/net shows it."""
    for table in ("tcp", "tcp6"):
        with suppress(OSError):
            for line in Path("/proc/net", table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    return True
    return False


def _tail(path: Path) -> str:
    with suppress(OSError):
        return path.read_text(errors="replace")[-1500:]
    return ""
