"""The optional packages harness imports only when a feature needs them, and the pip extra that brings each.

Every import of one of these goes through `require`, which turns its absence into one line naming the
extra (`pip install 'harness[convert]'`). pyproject.toml declares the extras; tests/unit/architecture/
test_dependencies.py checks that both agree and that every package harness imports is declared.
"""

import importlib
from types import ModuleType

from harness.errors import UserError

# import name -> (pip distribution, extra)
OPTIONAL = {
    "platformio": ("platformio", "boards"),
    "labgrid": ("labgrid", "farm"),
    "grpc": ("grpcio", "farm"),
    "packaging": ("packaging", "farm"),  # the labgrid version gate (harness/device/labgrid_adapter.py)
    "datasets": ("datasets", "datasets"),
    "pyvisa": ("pyvisa", "meters"),
    "joulescope": ("joulescope", "meters"),
    "ppk2_api": ("ppk2-api", "meters"),
    "tensorflow": ("tensorflow-cpu", "convert"),
    "keras": ("keras", "convert"),
    "tf_keras": ("tf-keras", "convert"),
    "pandas": ("pandas", "lab"),
    "pytest": ("pytest", "lab"),
}


def install_hint(module: str) -> str:
    """What brings an optional module: its package and the pip command for the extra."""
    package, extra = OPTIONAL[module.split(".")[0]]
    return f"{package}: pip install 'harness[{extra}]' (in a clone: .venv/bin/pip install -e '.[{extra}]')"


def require(module: str, purpose: str) -> ModuleType:
    """Import `module` of an optional package; if it is missing, a one-line UserError: `purpose` needs the
    package, and the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UserError(f"{purpose} needs {install_hint(module)}") from exc
