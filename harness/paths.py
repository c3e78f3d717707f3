"""Where harness finds its data files and keeps its cache."""

import os
from pathlib import Path

import platformdirs

PACKAGE_DIR = Path(__file__).resolve().parent


def share_dir() -> Path:
    """The folder holding boards/, models/ and firmware/: the source tree, or the installed copy."""
    source_tree = PACKAGE_DIR.parent
    if (source_tree / "boards").is_dir() and (source_tree / "firmware").is_dir():
        return source_tree
    return PACKAGE_DIR / "_share"


def boards_dir() -> Path:
    return share_dir() / "boards"


def models_dir() -> Path:
    return share_dir() / "models"


def cache_dir() -> Path:
    override = os.environ.get("HARNESS_CACHE_DIR")
    path = Path(override) if override else Path(platformdirs.user_cache_dir("harness"))
    path.mkdir(parents=True, exist_ok=True)
    return path


RESULTS_VARIABLE = "HARNESS_RESULTS_DIR"


def results_dir(given: str | Path | None = None) -> str | Path:
    """The results folder: `given` (--results, the API's `results`), else $HARNESS_RESULTS_DIR when it names
    one, else `results` in the working folder (docs/cli.md "Where runs are kept")."""
    if given is not None:
        return given
    named = os.environ.get(RESULTS_VARIABLE, "")
    return named if named.strip() else "results"


def model_mirror() -> Path | None:
    mirror = os.environ.get("HARNESS_MODEL_MIRROR")
    return Path(mirror) if mirror else None
