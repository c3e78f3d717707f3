"""Facts about a board kind live with that kind: its board type (harness/boards.py) and its driver
(harness/device/drivers/). Nowhere else does harness ask a board which kind it is: every module is read with
ast, and a `kind ==`, `!=`, `in` or `not in` test against a board kind (or a `match` on a board's kind) outside
those homes fails here, naming the line."""

import ast
from pathlib import Path

from harness.boards import BOARD_KINDS

HARNESS = Path(__file__).resolve().parents[3] / "harness"
HOMES = (HARNESS / "boards.py", HARNESS / "device" / "drivers")
TESTS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def _names_board_kind(node: ast.expr) -> bool:
    """A board kind's name, or a tuple, list or set holding one."""
    if isinstance(node, ast.Constant):
        return node.value in BOARD_KINDS
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and any(_names_board_kind(e) for e in node.elts)


def _is_board_kind(node: ast.expr) -> bool:
    """`<…board…>.kind`: the kind of something named a board (board.kind, self.board.kind, boards[i].kind)."""
    return isinstance(node, ast.Attribute) and node.attr == "kind" and "board" in ast.unparse(node.value).lower()


def _reads_kind(node: ast.expr) -> bool:
    """`<anything>.kind`, alone or in a tuple, list or set."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_reads_kind(e) for e in node.elts)
    return isinstance(node, ast.Attribute) and node.attr == "kind"


def kind_tests(source: str) -> list[int]:
    """The lines of `source` that test a board's kind."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(isinstance(op, TESTS) for op in node.ops):
            operands = [node.left, *node.comparators]
            kind_named = any(_names_board_kind(o) for o in operands)
            if (kind_named and any(_reads_kind(o) for o in operands)) or any(_is_board_kind(o) for o in operands):
                lines.append(node.lineno)
        elif isinstance(node, ast.Match) and _is_board_kind(node.subject):
            lines.append(node.lineno)
    return sorted(lines)


def _outside_homes() -> list[Path]:
    return [
        path
        for path in sorted(HARNESS.rglob("*.py"))
        if not any(path == home or home in path.parents for home in HOMES)
    ]


def test_the_reader_finds_every_form_of_a_kind_test():
    source = """
if board.kind == "device": pass
if self.board.kind != "virtual": pass
if b.kind in ("emulated", "device"): pass
if "hosted" not in {x.kind}: pass
ok = boards[0].kind == wanted
match board.kind:
    case "device": pass
fine = run.kind == "eval" or meter.kind in METERS or board.id == "device"
"""
    assert kind_tests(source) == [2, 3, 4, 5, 6, 7]


def test_no_board_kind_test_outside_the_board_types_and_the_drivers():
    found = [
        f"{path.relative_to(HARNESS.parent).as_posix()}:{line}"
        for path in _outside_homes()
        for line in kind_tests(path.read_text())
    ]
    assert not found, (
        "a board kind is tested outside harness/boards.py and harness/device/drivers/: put the fact on the board "
        f"type (boards.py) or its driver instead: {', '.join(found)}"
    )


def test_the_scan_reads_the_modules_that_used_to_test_kinds():
    scanned = {path.relative_to(HARNESS).as_posix() for path in _outside_homes()}
    assert {"device/launch.py", "cli/devices.py", "model/deployable.py", "firmware/tflm_obtain.py"} <= scanned
    assert not any(name.startswith("device/drivers/") or name == "boards.py" for name in scanned)


def test_every_board_kind_has_its_driver_and_every_driver_its_board_kind():
    from harness.device.drivers import DRIVERS

    reached = {name: driver for name, driver in DRIVERS.items() if name != "labgrid"}  # labgrid: a device board's
    assert set(reached) == set(BOARD_KINDS)
    assert all(driver.kind == kind for kind, driver in reached.items())
