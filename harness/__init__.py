"""harness: benchmark TinyML models on microcontrollers.

The Python API (harness/api, docs/api.md) is reached from here: `harness.open_board`, `harness.evaluate`,
`harness.perf`, `harness.profile`, `harness.stream`, `harness.load_run`, `harness.resume`. Each name is
imported when first used (PEP 562), so `import harness`, which every command does, stays light."""

import importlib as _importlib

__version__ = "0.1.0"


def _api():
    return _importlib.import_module("harness.api")  # not `from harness import api`: that would ask __getattr__


def __getattr__(name: str):
    api = _api() if not name.startswith("_") else None  # submodules are found by the import system
    if api is None or name not in api.API:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(api, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_api().API})
