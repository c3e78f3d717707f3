"""One way down: every file harness fetches (a model, a frontend, a TFLM archive) comes through here.

The bytes stream to a partial file beside the cache entry, hashed as they come, bounded by an overall deadline
(HARNESS_DOWNLOAD_DEADLINE, not only a per-socket timeout) and a size cap; the entry appears, in one rename, only
once the file is verified (its sha256, or the caller's verifier). On any failure the partial file is removed and
one line names the source, what went wrong and the way out (the caller's fix: a mirror).
"""

import hashlib
import http.client
import os
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness import reading
from harness.errors import UserError
from harness.files import write_atomically

DEADLINE_ENV = "HARNESS_DOWNLOAD_DEADLINE"
DEADLINE_SECONDS = 1800.0  # one file, start to end
SOCKET_TIMEOUT_SECONDS = 60.0  # each connect and read, within the deadline
CHUNK = 1 << 16


def deadline_seconds() -> float:
    value = os.environ.get(DEADLINE_ENV)
    if not value:
        return DEADLINE_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise UserError(f"{DEADLINE_ENV} is {value!r}; set it to a number of seconds above 0, or unset it")
    return seconds


@dataclass(frozen=True)
class Pinned:
    """What a download must turn out to be, and how a refusal is worded."""

    head: str  # the start of every refusal, naming the source: "could not fetch URL"
    fix: str | Callable[[], str]  # the way out, ending every refusal (a callable: worded only when needed)
    max_bytes: int
    sha256: str | None = None  # the file's, checked as it streams
    mismatch: Callable[[str], str] | None = None  # the refusal for another sha256, given the one found
    verify: Callable[[Path], None] | None = None  # checks the complete partial file; raises UserError

    def refuse(self, reason: str) -> UserError:
        return UserError(f"{self.head} ({reason}); {self.fix() if callable(self.fix) else self.fix}")


def _size(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):.1f} MiB" if nbytes >= 1 << 20 else f"{nbytes} bytes"


def _late() -> str:
    return f"not done within {deadline_seconds():g} s; {DEADLINE_ENV} sets that deadline"


class _Stop(Exception):
    """A stream cut short on purpose (the deadline, the size cap): the reason, for the refusal."""


def _socket(response):
    """The response's socket, so each read can be bounded by what remains of the deadline (urllib keeps it
    private; None where it is not a socket, as for file: URLs, whose reads never stall)."""
    raw = getattr(getattr(response, "fp", None), "raw", None)
    return getattr(raw, "_sock", None)


def _copy(stream: BinaryIO, out: BinaryIO, pin: Pinned, deadline: float | None, sock=None) -> str:
    """stream into out, within the deadline and the cap; the sha256 of what was copied."""
    digest, copied = hashlib.sha256(), 0
    read = getattr(stream, "read1", stream.read)  # read1: a trickle returns what came, so the deadline is seen
    while True:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Stop(_late())
            if sock is not None:
                sock.settimeout(min(SOCKET_TIMEOUT_SECONDS, remaining))
        chunk = read(CHUNK)
        if not chunk:
            return digest.hexdigest()
        copied += len(chunk)
        if copied > pin.max_bytes:
            raise _Stop(f"larger than {_size(pin.max_bytes)}, the most harness takes for it")
        digest.update(chunk)
        out.write(chunk)


def _check(pin: Pinned, got: str, partial: Path) -> None:
    if pin.sha256 is not None and got != pin.sha256:
        raise UserError(
            pin.mismatch(got) if pin.mismatch else f"{pin.head}: it has sha256 {got}, not the pinned {pin.sha256}"
        )
    if pin.verify is not None:
        pin.verify(partial)


def store(stream: BinaryIO, target: Path, pin: Pinned) -> Path:
    """An open stream (a member of an archive) into target, verified, or nothing at all."""

    def write(partial: Path) -> None:
        with open(partial, "wb") as out:
            try:
                got = _copy(stream, out, pin, None)
            except _Stop as stop:
                raise pin.refuse(str(stop)) from None
            except (OSError, EOFError, zipfile.BadZipFile) as exc:  # a damaged member: a CRC, a truncated stream
                raise pin.refuse(_reason(exc)) from exc
        _check(pin, got, partial)

    write_atomically(target, write, "cache entry")
    return target


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}" + (f" {exc.reason}" if exc.reason else "")
    if isinstance(exc, urllib.error.URLError):
        return str(getattr(exc.reason, "strerror", None) or exc.reason)
    if isinstance(exc, TimeoutError):
        return "no answer within the network timeout"
    if isinstance(exc, zipfile.BadZipFile):
        return f"a damaged zip archive: {exc}"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _copy_file(path: Path, out: BinaryIO, pin: Pinned, deadline: float) -> str:
    try:
        with reading.open_binary(path, reading.FileKind("mirror file", pin.max_bytes)) as stream:
            return _copy(stream, out, pin, deadline)
    except UserError as exc:  # missing, not a regular file, too large: said by reading, with the way out added
        raise pin.refuse(str(exc)) from None


def download(source: str, target: Path, pin: Pinned) -> Path:
    """source (a URL, or a path in a mirror folder) into target, verified, or a UserError and nothing at all."""
    deadline = time.monotonic() + deadline_seconds()

    def write(partial: Path) -> None:
        with open(partial, "wb") as out:
            try:
                if "://" not in source:  # a mirror folder: read as any file is read
                    got = _copy_file(Path(source), out, pin, deadline)
                else:
                    request = urllib.request.Request(source, headers={"User-Agent": "harness"})
                    timeout = min(SOCKET_TIMEOUT_SECONDS, deadline - time.monotonic())
                    with urllib.request.urlopen(request, timeout=timeout) as response:
                        length = response.headers.get("Content-Length")
                        if length and length.isdigit() and int(length) > pin.max_bytes:
                            raise _Stop(f"{_size(int(length))}, more than the {_size(pin.max_bytes)} harness takes")
                        got = _copy(response, out, pin, deadline, _socket(response))
            except _Stop as stop:
                raise pin.refuse(str(stop)) from None
            except (OSError, ValueError, http.client.HTTPException) as exc:
                late = isinstance(exc, TimeoutError) and time.monotonic() >= deadline
                raise pin.refuse(_late() if late else _reason(exc)) from exc
        _check(pin, got, partial)

    write_atomically(target, write, "cache entry")
    return target
