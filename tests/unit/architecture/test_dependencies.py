"""Every package harness imports is declared in pyproject.toml: the core ones as dependencies, the optional
ones in the extra harness/extras.py names, imported only through `harness.extras.require`.

Every module is read with ast, so an import inside a function counts as much as one at the top, and so does
a module named to `require("...")`. A new import of an undeclared package fails here, naming file and line.
"""

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.extras import OPTIONAL, require

REPO = Path(__file__).resolve().parents[3]
HARNESS = REPO / "harness"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

# Import names that differ from the distribution that brings them (the optional ones are in harness/extras.py).
DISTRIBUTION_OF = {
    "PIL": "pillow",
    "elftools": "pyelftools",
    "serial": "pyserial",
    "skimage": "scikit-image",
    "tflite_micro": "tflite-micro",
    "ai_edge_litert": "ai-edge-litert",
} | {module: package for module, (package, _extra) in OPTIONAL.items()}
RUNTIME_EXTRAS = ("boards", "farm", "datasets", "meters", "convert", "lab")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(requirements: list[str]) -> set[str]:
    return {normalized(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in requirements if not r.startswith("harness[")}


CORE = requirement_names(PYPROJECT["dependencies"])
EXTRAS = {name: requirement_names(reqs) for name, reqs in PYPROJECT["optional-dependencies"].items()}


def third_party_imports() -> list[tuple[str, str, bool]]:
    """(top-level module, file:line, through require) for every import of a package that is neither the
    standard library nor harness."""
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        where = path.relative_to(REPO)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules, through_require = [alias.name for alias in node.names], False
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules, through_require = [node.module], False
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "require"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                modules, through_require = [node.args[0].value], True
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top != "harness" and top not in sys.stdlib_module_names:
                    found.append((top, f"{where}:{node.lineno}", through_require))
    return found


IMPORTS = third_party_imports()


def test_the_scan_finds_the_imports_it_should():
    tops = {top for top, _, _ in IMPORTS}
    assert {"numpy", "flatbuffers", "tflite_micro", "platformio", "labgrid", "datasets", "pyvisa", "tensorflow"} <= tops


def test_every_imported_package_is_declared():
    declared = CORE.union(*(EXTRAS[name] for name in RUNTIME_EXTRAS))
    undeclared = [
        f"{where}: {top} ({DISTRIBUTION_OF.get(top, top)})"
        for top, where, _ in IMPORTS
        if normalized(DISTRIBUTION_OF.get(top, top)) not in declared
    ]
    assert not undeclared, "imported but not declared in pyproject.toml:\n" + "\n".join(undeclared)


def test_optional_packages_are_imported_through_require_only():
    direct = [
        f"{where}: import {top}" for top, where, through_require in IMPORTS if top in OPTIONAL and not through_require
    ]
    assert not direct, "optional packages imported without harness.extras.require:\n" + "\n".join(direct)
    unknown = [
        f"{where}: require({top!r})"
        for top, where, through_require in IMPORTS
        if through_require and top not in OPTIONAL
    ]
    assert not unknown, "require() of a package harness/extras.py does not list:\n" + "\n".join(unknown)


def test_the_core_holds_no_optional_package():
    assert not CORE & {normalized(package) for package, _ in OPTIONAL.values()}


@pytest.mark.parametrize("module", sorted(OPTIONAL))
def test_each_optional_package_is_in_its_extra(module):
    package, extra = OPTIONAL[module]
    assert extra in RUNTIME_EXTRAS and normalized(package) in EXTRAS[extra]


@pytest.mark.parametrize("module", sorted(OPTIONAL))
def test_a_missing_optional_package_is_one_line_naming_its_extra(module, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # None in sys.modules: `import module` raises ImportError
    with pytest.raises(UserError) as refused:
        require(f"{module}.anything", "the feature")
    message = str(refused.value)
    _package, extra = OPTIONAL[module]
    assert "\n" not in message and message.startswith("the feature needs ")
    assert f"pip install 'harness[{extra}]'" in message
