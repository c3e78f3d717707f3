"""Runs named briefly (docs/cli.md "Naming a run"): a run id, any unique prefix of one, `latest`, `latest~N`
(N runs before it), or the number `harness runs list` shows, resolved to the run folder's name.

The list is numbered once, eval and stream runs together, oldest first from 1 (harness/results/runs.py
`scan_runs`): a run keeps its number as newer runs are added, and `latest` is the highest number."""

import re
from collections.abc import Callable, Sequence

from harness.errors import UserError

LATEST = re.compile(r"latest(?:~(\d{1,9}))?")
FORMS = "its id, a unique prefix of it, its number in `harness runs list`, latest or latest~N"
_LONGEST_NUMBER = 6  # more digits are a prefix of a run id (ids begin with an 8-digit date), never a number
_NAMED = 3  # candidates an ambiguous prefix names


def resolve(
    spec: str,
    ids: Sequence[str],
    numbered: Callable[[], Sequence[str]],
    where: str,
    newest: Callable[[], Sequence[str]] | None = None,
    newest_are: str = "run",
) -> str | None:
    """The run folder's name `spec` names, or None when it names none (the caller words that).

    ids: the run folders' names, for an exact match or a prefix; numbered(): the runs `harness runs list`
    numbers, oldest first; newest(): the runs `latest` counts back from, oldest first (default: numbered()).
    Either is called only when spec is a number or latest. where: the results folder, newest_are: what newest()
    holds (a "run", an "unfinished run"), for messages."""
    if spec in ids:
        return spec
    latest = LATEST.fullmatch(spec)
    if latest:
        runs = (newest or numbered)()
        back = int(latest.group(1) or 0)
        if back >= len(runs):
            held = f"only latest~0 … latest~{len(runs) - 1}" if runs else "none"
            raise UserError(
                f"{spec} names no run: {where} holds {_runs(len(runs), newest_are)} ({held}); `harness runs list`"
            )
        return runs[len(runs) - 1 - back]
    number = spec.isascii() and spec.isdigit() and len(spec) <= _LONGEST_NUMBER
    if number:
        runs = numbered()
        if 1 <= int(spec) <= len(runs):
            return runs[int(spec) - 1]
    matches = sorted(name for name in ids if name.startswith(spec))
    if len(matches) > 1:
        named = ", ".join(matches[:_NAMED]) + (", …" if len(matches) > _NAMED else "")
        raise UserError(
            f"run {spec} is ambiguous: {len(matches)} runs in {where} begin so ({named}); "
            "give more of the id, or its number in `harness runs list`"
        )
    if matches:
        return matches[0]
    if number:
        raise UserError(f"no run numbered {spec}: `harness runs list` numbers {_runs(len(runs))} in {where}")
    return None


def _runs(count: int, kind: str = "run") -> str:
    return f"{count} {kind}" + ("" if count == 1 else "s")
