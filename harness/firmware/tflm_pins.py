"""TFLM pins and recipes (docs/tflm.md): tflite-micro at a pinned commit and the third-party archives its Makefile
names, each pinned by URL and the sha256 of its files (tflm_pins.toml, or the file HARNESS_TFLM_PINS names); a
board's [tflm] table makes a recipe of them, whose key names its tree in the cache. Boards that get TFLM from a
registry package instead say so here (tflm_source, elsewhere)."""

import hashlib
import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from harness import reading
from harness.errors import UserError, setting

PINS_FILE = Path(__file__).with_name("tflm_pins.toml")
RECIPE_FORMAT = 1  # bump when what a key stands for changes


@dataclass(frozen=True)
class Archive:
    name: str
    version: str
    url: str  # upstream
    file: str  # its name in a mirror and in the archive cache
    sha256: str  # of its files: see files_sha256
    dest: str = ""  # under tools/make/downloads/ ("" for tflite-micro itself)
    patch: str = ""  # TFLM's patch for it, relative to the tflite-micro root
    only_for: tuple[str, ...] = ()  # needed only with one of these Makefile options (none: always)

    def needed(self, options: list[str]) -> bool:
        return not self.only_for or any(option in options for option in self.only_for)


@dataclass(frozen=True)
class Pins:
    commit: str
    tflite_micro: Archive
    third_party: tuple[Archive, ...]
    placeholders: tuple[str, ...]  # folders the Makefile clones that no tree uses
    toolchain_root: str
    source: Path


def _archive(entry: dict, where: Path) -> Archive:
    try:
        return Archive(
            name=entry["name"],
            version=str(entry["version"]),
            url=entry["url"],
            file=entry["file"],
            sha256=entry["sha256"].lower(),
            dest=entry.get("dest", ""),
            patch=entry.get("patch", ""),
            only_for=tuple(entry.get("only_for", ())),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"TFLM pins {where}: an archive lacks {exc}; compare it with {PINS_FILE}") from exc


def load_pins() -> Pins:
    """harness's pins, or the file HARNESS_TFLM_PINS names (same layout: a lab pinning other versions, tests)."""
    path = Path(os.environ.get("HARNESS_TFLM_PINS") or PINS_FILE)
    data = reading.read_toml(path, reading.PINS)  # a FIFO, a device, non-UTF-8 or deep nesting: one line
    try:
        tflm = data["tflite_micro"]
        return Pins(
            commit=tflm["commit"],
            tflite_micro=_archive(tflm | {"name": "tflite-micro", "version": tflm["commit"][:8]}, path),
            third_party=tuple(_archive(entry, path) for entry in data.get("third_party", ())),
            placeholders=tuple(tflm.get("placeholders", ())),
            toolchain_root=tflm.get("toolchain_root", "/usr/bin/"),
            source=path,
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"TFLM pins {path} are unreadable ({exc}); compare them with {PINS_FILE}") from exc


@dataclass(frozen=True)
class Recipe:
    """What a tree is generated from: the pins and the Makefile options a board's [tflm] table names."""

    kernels: str  # OPTIMIZED_KERNEL_DIR, or "reference" for TFLM's reference kernels
    target: str  # TARGET ("" : the Makefile's default, the host)
    target_arch: str
    pins: Pins

    @property
    def options(self) -> list[str]:
        options = []
        if self.target:
            options.append(f"TARGET={self.target}")
        if self.target_arch:
            options.append(f"TARGET_ARCH={self.target_arch}")
        if self.kernels != "reference":
            options.append(f"OPTIMIZED_KERNEL_DIR={self.kernels}")
        if self.target:  # a cross target: the system's compiler, or the Makefile downloads Arm's toolchain
            options.append(f"TARGET_TOOLCHAIN_ROOT={self.pins.toolchain_root}")
        return options

    @property
    def makefile_options(self) -> str:
        return " ".join(self.options)

    @property
    def third_party(self) -> list[Archive]:
        return [archive for archive in self.pins.third_party if archive.needed(self.options)]

    @property
    def archives(self) -> list[Archive]:
        return [self.pins.tflite_micro, *self.third_party]

    def describe(self) -> dict:
        return {
            "format": RECIPE_FORMAT,
            "tflite_micro": {
                "commit": self.pins.commit,
                "url": self.pins.tflite_micro.url,
                "sha256": self.pins.tflite_micro.sha256,
            },
            "makefile_options": self.makefile_options,
            "third_party": [
                {"name": a.name, "version": a.version, "url": a.url, "sha256": a.sha256, "patch": a.patch}
                for a in self.third_party
            ],
            "placeholders": list(self.pins.placeholders),
        }

    @cached_property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.describe(), sort_keys=True).encode()).hexdigest()[:16]

    def summary(self) -> str:
        kernels = "reference kernels" if self.kernels == "reference" else f"{self.kernels} kernels"
        where = f"{self.target} {self.target_arch}".strip() or "host target"
        return f"tflite-micro {self.pins.commit[:8]}, {kernels}, {where}"


# TFLM from a registry package (board file [platformio] tflm) rather than a tree: the kernels it brings.
PACKAGED_KERNELS = {
    "lib_deps": "cmsis_nn (Arduino_TensorFlowLite library)",
    "idf_component": "esp-nn (esp-tflite-micro component)",
}


def tflm_source(board) -> str:
    """Where a board's firmware gets TFLM when no --tflm is given: "tree" (harness prepares one),
    "lib_deps" or "idf_component" (the board file's pinned package), or "none"."""
    return board.tflm_source if board.hal_dir is not None else "none"


def board_recipe(board, pins: Pins | None = None) -> Recipe | None:
    """The board's [tflm] recipe when harness prepares its tree; None when it gets TFLM elsewhere."""
    if tflm_source(board) != "tree":
        return None
    table = board.tflm
    if table is None:
        raise UserError(
            f"board {board.id} has no [tflm] recipe (kernels, target, target_arch) in {board.source_file}; "
            f"add one (docs/tflm.md) or pass {setting('tflm')} PATH"
        )
    return Recipe(table.kernels, table.target, table.target_arch, pins or load_pins())


def elsewhere(board) -> str:
    """One line: where a board that needs no harness tree gets TFLM."""
    source = tflm_source(board)
    if source == "idf_component":
        components = board.platformio.idf_components
        packages = ", ".join(f"{name} {version}" for name, version in components.items())
        return f"{board.id}: TFLM is the ESP-IDF component {packages}, {PACKAGED_KERNELS[source]}, via PlatformIO"
    if source == "lib_deps":
        packages = ", ".join(board.platformio.lib_deps)
        return f"{board.id}: TFLM is the PlatformIO library {packages}, {PACKAGED_KERNELS[source]}"
    return f"{board.id}: harness prepares no TFLM tree for a {board.kind} board"
