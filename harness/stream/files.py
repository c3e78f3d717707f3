"""Atomic file writes for the stream package: a reader never sees half a ledger or half a WAV."""

import os
from collections.abc import Callable
from pathlib import Path


def partial_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.partial")


def write_atomically(target: Path, write: Callable[[Path], None]) -> None:
    """write(partial) fills a temporary file next to target, which then replaces target in one step."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(target)
    try:
        write(partial)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
