"""Everything a result needs to be traced back: code, host, runtimes, board, firmware, model, data."""

import hashlib
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from serial.tools import list_ports

from harness import __version__
from harness.paths import share_dir

RUNTIME_PACKAGES = ("tflite-micro", "ai-edge-litert", "numpy", "pyserial")


def harness_source() -> dict:
    """The harness version, and the git commit when it runs from a checkout."""
    source = {"version": __version__, "git_sha": None, "git_dirty": None}
    root = share_dir()
    if (root / ".git").exists():
        try:
            sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
            status = subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=10,
            )
            source["git_sha"] = sha.stdout.strip() or None
            source["git_dirty"] = bool(status.stdout.strip()) if status.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            pass
    return source


def host_machine() -> dict:
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "runtimes": {name: _version(name) for name in RUNTIME_PACKAGES},
    }


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def usb_serial_number(port: str | None) -> str | None:
    """The USB serial number of the port a real board is on (None for pseudo-terminals and sockets)."""
    if not port:
        return None
    for candidate in list_ports.comports():
        if candidate.device == port:
            return candidate.serial_number
    return None


def subset_content_hashes(samples, subsets, members: dict[str, frozenset[str]] | None = None) -> dict[str, str]:
    """Per subset, a hash of its members' ids and labels: equal hashes mean the same evaluation data.
    `members`: the ids each subset is scored on (its draw, harness/eval/sampling.py); by default its members."""
    hashes = {}
    for subset in subsets:
        digest = hashlib.sha256()
        ids = members[subset.name] if members else None
        for sample in samples:
            if subset.contains(sample) if ids is None else sample.id in ids:
                digest.update(f"{sample.id}\t{subset.label(sample)}\n".encode())
        hashes[subset.name] = digest.hexdigest()
    return hashes


def file_sha256(path: Path) -> str:
    """A file's sha256, streamed (a stream's WAV may be long)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
