"""The memory gates of `harness runs check`: the arena the DUT reported and the firmware image's flash bytes,
each against a ceiling (arena_bytes, flash_bytes) or its growth over a baseline's (arena, flash)."""

from harness.results.manifest import FirmwareBuild
from harness.results.runs import Run
from harness.results.verdicts import Verdict, judged, not_judged

Measured = tuple[int | None, str]  # bytes (None: not reported) and what they are


def _arena(run: Run) -> Measured:
    arena = run.eval_summary.arena  # "not reported" is None (runs of earlier versions stored 0)
    return arena.used, f"{arena.source} arena"


def flash_used(run: Run) -> Measured:
    """The firmware image's flash bytes from its ELF, else (the virtual board) the model file's bytes; and which."""
    manifest = run.record.manifest
    firmware = manifest.device.firmware or FirmwareBuild()
    if firmware.flash_bytes:
        return firmware.flash_bytes, "firmware image"
    return manifest.model.bytes or None, "model file"


def _ceiling(name: str, current: Measured, limit: int) -> Verdict:
    """Arena or flash bytes against a ceiling; flash only as the firmware image's bytes from its ELF."""
    used, kind = current
    if used is None:
        return not_judged(f"{name} not reported by the DUT")
    if kind == "model file":
        return not_judged(
            f"no firmware image in this run (the virtual board runs a {used:,}-byte model file); "
            "flash_bytes judges the ELF of firmware harness builds"
        )
    where = "firmware image, from the ELF" if kind == "firmware image" else kind
    return judged(used <= limit, f"{used:,} bytes ({where})")


def _growth(name: str, current: Measured, previous: Measured, limit: int) -> Verdict:
    (used, kind), (used_before, kind_before) = current, previous
    if used is None or used_before is None:
        which = "this run" if used is None else "the baseline"
        return not_judged(f"not comparable: {name} not reported by the DUT in {which}")
    if kind != kind_before:
        return not_judged(f"not comparable: {kind} bytes against the baseline's {kind_before} bytes")
    return judged(used - used_before <= limit, f"{used_before:,} -> {used:,} bytes ({kind}), {used - used_before:+,}")


def arena_bytes(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    return _ceiling("arena", _arena(run), settings["max"])


def flash_bytes(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    return _ceiling("flash", flash_used(run), settings["max"])


def arena(settings: dict, run: Run, baseline: Run) -> Verdict:
    return _growth("arena", _arena(run), _arena(baseline), settings["max_growth_bytes"])


def flash(settings: dict, run: Run, baseline: Run) -> Verdict:
    return _growth("flash", flash_used(run), flash_used(baseline), settings["max_growth_bytes"])
