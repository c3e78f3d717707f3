"""One registry of wire protocols, from which every list of them derives; roles beyond the core session that a
protocol has or lacks, a command that needs a lacking one refused by a type check before its board starts."""

import ast
import dataclasses
from pathlib import Path

import pytest

from harness.boards import get_board
from harness.device.drivers import DRIVERS, ConnectOptions, driver_for
from harness.errors import UserError
from harness.link import registry
from harness.link.client import DeviceClient
from harness.link.eembc import EembcClient
from harness.link.registry import NATIVE_PROTOCOL, PROTOCOL_NAMES, PROTOCOLS, session_type
from harness.link.roles import ROLES, BaudSwitching, KeywordStreaming, LinkTesting, Profiling, Recovery, refuse, require
from harness.link.session import Unsupported
from harness.tensors import TensorSpec

HARNESS = Path(__file__).resolve().parents[3] / "harness"
SPEC = TensorSpec(3, (1, 4), 0.5, 2, 4)


def _literal_lists(tree: ast.AST):
    """The string elements of every tuple, list and set literal and every dict's keys in a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [key for key in node.keys if key is not None]
        else:
            continue
        yield node.lineno, {item.value for item in items if isinstance(item, ast.Constant)}


def test_the_registry_is_the_only_list_of_protocols():
    assert tuple(PROTOCOLS) == PROTOCOL_NAMES and NATIVE_PROTOCOL in PROTOCOLS
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        if path == Path(registry.__file__):
            continue
        for line, names in _literal_lists(ast.parse(path.read_text(), str(path))):
            if len(names & set(PROTOCOL_NAMES)) > 1:
                found.append(f"{path.relative_to(HARNESS.parent)}:{line}")
    assert found == [], "protocols listed outside harness/link/registry.py"


def test_every_driver_and_the_parser_take_their_protocols_from_the_registry():
    for driver in DRIVERS.values():
        assert driver.protocols is PROTOCOL_NAMES or driver.protocols == (NATIVE_PROTOCOL,), driver.kind
    assert {driver.kind for driver in DRIVERS.values() if driver.protocols is PROTOCOL_NAMES} == {
        "virtual",
        "emulated",
        "hosted",
        "device",
        "labgrid",
    }
    from harness.cli.app import build_parser

    parser = build_parser()
    eval_parser = next(a for a in parser._actions if a.dest == "command").choices["eval"]
    protocol = next(a for a in eval_parser._actions if a.dest == "protocol")
    assert tuple(protocol.choices) == PROTOCOL_NAMES and protocol.default == NATIVE_PROTOCOL


def test_each_registered_name_resolves_to_its_session_and_an_unknown_one_is_refused_in_one_line():
    assert session_type("harness") is DeviceClient and session_type("eembc") is EembcClient
    assert all(session_type(name).protocol == name for name in PROTOCOL_NAMES)
    with pytest.raises(Exception, match="unknown protocol 'nosuch'; choose one of harness, eembc"):
        session_type("nosuch")


def test_ours_has_every_role_and_the_dut_protocol_none_by_type():
    client, dut = DeviceClient(None), EembcClient(None, SPEC, SPEC)
    for role in ROLES:
        assert isinstance(client, role) and issubclass(DeviceClient, role)
        assert not isinstance(dut, role) and not issubclass(EembcClient, role)
        assert require(client, role) is client


class _Profiler:
    """Has `profile` without naming the role among its bases: a role is a protocol, met by its members."""

    protocol = "toy"

    def profile(self, data):
        return None


class _Plain:
    protocol = "toy"


def test_a_session_lacking_a_role_is_refused_by_type_with_its_reason_or_the_roles_name():
    refuse(_Profiler, Profiling)
    with pytest.raises(Unsupported, match=r"^'protocol' toy: it has no LinkTesting role$"):
        refuse(_Plain, LinkTesting)
    with pytest.raises(Unsupported, match=r"^'protocol' eembc: the DUT protocol times whole inferences"):
        require(EembcClient(None, SPEC, SPEC), Profiling)


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (ConnectOptions(protocol="eembc", roles=(Profiling,)), "times whole inferences, not operators"),
        (ConnectOptions(protocol="eembc", roles=(KeywordStreaming,)), "has no audio streaming"),
        (ConnectOptions(protocol="eembc", roles=(LinkTesting,)), "`harness boards link-test` needs harness firmware"),
        (ConnectOptions(protocol="eembc", faults=object()), "has no resends, so a damaged byte ends the run"),
    ],
)
def test_a_command_needing_a_role_the_protocol_lacks_is_refused_before_its_board_starts(options, reason):
    with pytest.raises(Unsupported, match="'protocol' eembc") as refused:
        driver_for(get_board("sim"), object(), options)  # only checked: nothing starts
    assert reason in str(refused.value) and "\n" not in str(refused.value)
    # ours is refused nothing but operator timing, which the virtual board's host interpreter lacks
    driver_for(get_board("sim"), object(), ConnectOptions(roles=tuple(r for r in ROLES if r is not Profiling)))
    with pytest.raises(UserError, match=r"^sim cannot time operators: .* no per-operator timer"):
        driver_for(get_board("sim"), object(), ConnectOptions(roles=(Profiling,)))


def test_a_board_that_switches_baud_needs_the_baud_switching_role():
    board = get_board("sim")
    switching = dataclasses.replace(board, link=dataclasses.replace(board.link, switch_baudrate=921600))
    with pytest.raises(Unsupported, match="cannot switch the baud rate"):
        driver_for(switching, object(), ConnectOptions(protocol="eembc"))
    assert BaudSwitching in EembcClient.LACKS and Recovery in EembcClient.LACKS
