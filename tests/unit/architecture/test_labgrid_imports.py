"""labgrid is imported by one module only, harness/device/labgrid_adapter.py, which pins the labgrid versions
harness is tested with: every other module reaches labgrid through it."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
ADAPTER = "harness/device/labgrid_adapter.py"
IMPORTERS = ("require", "import_module", "__import__")  # harness.extras.require and importlib alike


def _labgrid_imports(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in IMPORTERS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names = [node.args[0].value]
        else:
            continue
        lines += [node.lineno for name in names if name == "labgrid" or name.startswith("labgrid.")]
    return lines


def test_only_the_adapter_imports_labgrid():
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted((REPO / "harness").rglob("*.py"))
        if str(path.relative_to(REPO)) != ADAPTER
        for line in _labgrid_imports(path)
    ]
    assert not found, f"labgrid imported outside {ADAPTER} (go through it):\n" + "\n".join(found)


def test_the_scan_sees_the_adapters_imports():
    assert _labgrid_imports(REPO / ADAPTER), "the scan found no labgrid import in the adapter: it is broken"
