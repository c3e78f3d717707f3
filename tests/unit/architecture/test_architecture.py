"""The packages of harness/ form layers: no import cycle between them, and the stated order holds.

Every module is read with ast, so an import inside a function counts as much as one at the top: a
cycle hidden in a function is still a cycle. A package is a folder harness/<name>/; a top-level module
(harness/errors.py, …) is a node of its own, named by its module.
"""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[3] / "harness"

ARCHITECTURE = HARNESS.parent / "docs" / "architecture.md"


def documented_layers() -> list[str]:
    """The packages as docs/architecture.md stacks them, bottom first: a package may import the ones below
    it, never one above (the page's first code block lists them top to bottom)."""
    block = ARCHITECTURE.read_text().split("```")[1]
    names = [line.split()[0] for line in block.splitlines() if line.startswith("harness/")]
    return [name.removeprefix("harness/") for name in reversed(names) if not name.endswith(".py")]


LAYERS = documented_layers()


def _node(module: str) -> str | None:
    """The node a harness module belongs to: its package (harness/<name>/), else its top-level module;
    None for anything that is not harness's (or names no module of it, such as harness.__version__)."""
    parts = module.split(".")
    if parts[0] != "harness" or len(parts) < 2:
        return None
    if (HARNESS / parts[1]).is_dir():
        return parts[1]
    return f"harness.{parts[1]}" if (HARNESS / f"{parts[1]}.py").is_file() else None


def imports_in(source: str, module: str, is_package: bool = False) -> list[tuple[str, int]]:
    """(node, line) of every harness import anywhere in a module's source: `import x`, `from x import y`
    (`from harness import eval` names the eval package), relative imports resolved against `module`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, node.module] if node.module else package)
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")]
        else:
            continue
        found.update((_node(target), node.lineno) for target in targets if _node(target))
    return sorted(found, key=lambda item: (item[1], item[0]))


def package_graph() -> dict[tuple[str, str], list[str]]:
    """(importing node, imported node) -> the import lines, as "harness/x/y.py:12"."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(HARNESS.rglob("*.py")):
        parts = list(path.relative_to(HARNESS.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        importer = _node(module)
        if importer is None:  # harness/__init__.py: it only hands out the Python API's names (harness/api)
            continue
        where = path.relative_to(HARNESS.parent).as_posix()
        for imported, line in imports_in(path.read_text(), module, is_package):
            if imported != importer:
                edges[(importer, imported)].append(f"{where}:{line}")
    return dict(edges)


def strongly_connected(edges) -> list[list[str]]:
    """Tarjan's strongly connected components of the graph, each sorted."""
    successors = defaultdict(set)
    for a, b in edges:
        successors[a].add(b)
    nodes = sorted({n for edge in edges for n in edge})
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(successors[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(sorted(component))

    for v in nodes:
        if v not in index:
            visit(v)
    return components


@pytest.fixture(scope="module")
def graph():
    return package_graph()


def _lines(graph, importer: str, imported: str) -> str:
    return f"{importer} -> {imported}: " + ", ".join(graph[(importer, imported)])


def test_the_reader_sees_every_form_of_import():
    source = """
import harness.model.card
from harness import eval
from harness.link.client import DeviceClient
from ..device import launch
from . import figures
import numpy, harness


def later():
    from harness.cli import main
    import harness.streaming.run as run


class Later:
    def method(self):
        from harness.errors import UserError
        from harness import __version__
"""
    assert imports_in(source, "harness.results.report") == [
        ("model", 2),
        ("eval", 3),
        ("link", 4),
        ("device", 5),
        ("results", 6),
        ("cli", 11),
        ("streaming", 12),
        ("harness.errors", 17),
    ]
    assert imports_in("from .. import model", "harness.eval", is_package=True) == [("model", 1)]


def test_a_cycle_is_found_and_named():
    edges = {("a", "b"): ["a.py:1"], ("b", "c"): ["b.py:2"], ("c", "a"): ["c.py:3"], ("c", "d"): ["c.py:4"]}
    assert [c for c in strongly_connected(edges) if len(c) > 1] == [["a", "b", "c"]]
    assert shortest_cycles(["a", "b", "c"], edges) == [["a", "b", "c"]]


def test_the_graph_holds_imports_made_inside_functions(graph):
    # harness/cli/models.py imports harness.eval.convert only inside cmd_convert
    assert any(where.startswith("harness/cli/models.py") for where in graph[("cli", "eval")])
    assert ("device", "link") in graph and ("firmware", "model") in graph


def shortest_cycles(component: list[str], edges) -> list[list[str]]:
    """For each node of a component, the shortest cycle through it (each cycle once, from its least node)."""
    successors = defaultdict(list)
    for a, b in sorted(edges):
        if a in component and b in component:
            successors[a].append(b)
    found = []
    for start in component:
        paths, seen = [[start]], {start}
        while paths:
            path = paths.pop(0)
            if start in successors[path[-1]]:
                cycle = path[path.index(min(path)) :] + path[: path.index(min(path))]
                if cycle not in found:
                    found.append(cycle)
                break
            for nxt in successors[path[-1]]:
                if nxt not in seen:
                    seen.add(nxt)
                    paths.append([*path, nxt])
    return found


def test_no_import_cycle_between_packages(graph):
    components = [c for c in strongly_connected(graph) if len(c) > 1]
    report = []
    for component in components:
        report.append("import cycle between " + ", ".join(component) + ":")
        for cycle in shortest_cycles(component, graph):
            report.append("  " + " -> ".join([*cycle, cycle[0]]))
            steps = zip(cycle, [*cycle[1:], cycle[0]], strict=True)
            report += ["    " + _lines(graph, a, b) for a, b in steps]
    if components:
        pytest.fail("\n".join(report), pytrace=False)


@pytest.mark.parametrize("lower", LAYERS[:-1])
def test_layers_import_only_downwards(graph, lower):
    above = LAYERS[LAYERS.index(lower) + 1 :]
    wrong = [_lines(graph, lower, upper) for upper in above if (lower, upper) in graph]
    if wrong:
        pytest.fail(f"{lower} sits below {', '.join(above)}:\n" + "\n".join(wrong), pytrace=False)


@pytest.mark.parametrize(
    ("importer", "forbidden"),
    [
        ("model", "firmware"),
        ("model", "eval"),
        ("link", "device"),
        ("eval", "lpirc"),
        ("eval", "streaming"),
        ("eval", "cli"),
        ("audio", "eval"),  # keyword datasets and frontends are what eval's keyword task runs
    ],
)
def test_stated_layer_pairs(graph, importer, forbidden):
    if (importer, forbidden) in graph:
        pytest.fail(_lines(graph, importer, forbidden), pytrace=False)


def test_docs_stack_every_package():
    packages = sorted(p.name for p in HARNESS.iterdir() if p.is_dir() and any(p.glob("*.py")))
    assert sorted(LAYERS) == packages, "docs/architecture.md must stack every package of harness/"


def test_only_the_cli_imports_the_cli(graph):
    wrong = [_lines(graph, a, b) for (a, b) in sorted(graph) if b == "cli" and a not in ("cli", "harness.__main__")]
    if wrong:
        pytest.fail("\n".join(wrong), pytrace=False)


def test_no_api_name_is_also_a_module_of_harness():
    """`import harness.x` sets the attribute harness.x to the module, so an API function of the same name would be
    replaced by a module for every caller once anything imported it (harness.stream was, by harness/stream)."""
    from harness.api import API

    modules = {p.stem for p in HARNESS.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert not sorted(set(API) & modules)


@pytest.mark.parametrize("module", ["harness.downloads", "harness.files", "harness.reading"])
def test_the_one_ways_in_out_and_down_import_no_package(graph, module):
    """Every package reads, writes and downloads through these, so they sit below all of them."""
    wrong = [_lines(graph, module, package) for package in LAYERS if (module, package) in graph]
    if wrong:
        pytest.fail("\n".join(wrong), pytrace=False)
