"""Atomic file writes: a reader never sees half a file (a ledger, a WAV, a model in the cache)."""

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


def write_bytes_atomically(target: Path, data: bytes) -> None:
    write_atomically(target, lambda partial: partial.write_bytes(data))
