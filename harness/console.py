"""Terminal output: a progress bar with ETA on a terminal, plain progress lines under CI or in logs.

rich is imported where it is used: every command imports this module, most before they print anything, and
a refused command prints one plain line."""

import errno
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

# Whoever runs the work says whether it may print progress: the CLI for --quiet and --json, the Python API
# for its `progress` keyword. A context variable, so that it holds for one call (and the threads it starts
# with its context), not for the process.
_QUIET: ContextVar[bool] = ContextVar("harness_quiet", default=False)


def is_quiet() -> bool:
    """No progress bars and no notices on stderr (inside `quieted(True)`)."""
    return _QUIET.get()


@contextmanager
def quieted(quiet: bool = True) -> Iterator[None]:
    """Progress and notices off (or on, `quiet=False`) for the block."""
    token = _QUIET.set(quiet)
    try:
        yield
    finally:
        _QUIET.reset(token)


def notice(text: str) -> None:
    """A line on stderr saying what harness fetches, builds or waits for; none when quiet."""
    if not is_quiet():
        print(text, file=sys.stderr, flush=True)


NOT_CI = ("", "0", "false", "no", "off")


def under_ci() -> bool:
    """CI read as a boolean: 0/false/no/off (any case) or empty is no CI; 1/true/yes/on, or any other value
    a CI service sets it to, is CI."""
    return os.environ.get("CI", "").strip().lower() not in NOT_CI


def interactive() -> bool:
    return sys.stderr.isatty() and not under_ci()


def percent(value: float | None) -> str:
    """A share as a percentage with one decimal, or n/a."""
    return "n/a" if value is None else f"{100 * value:.1f}"


def percent_interval(interval: tuple[float, float] | list[float] | None) -> str:
    """A 95 % interval of a share as percentages, low-high, or n/a."""
    return "n/a" if interval is None else f"{100 * interval[0]:.1f}-{100 * interval[1]:.1f}"


def _json_value(value):
    """What json cannot write itself: a pydantic table (a board's [eembc]) as its fields, anything else as text."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else str(value)


def print_json(data) -> None:
    print(json.dumps(data, indent=2, default=_json_value))


def stdout_width() -> int:
    """The width tables get when stdout is not a terminal: $COLUMNS when it is a number, else 160 (a log
    file or a pipe has no width of its own)."""
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else 160


def stdout_console() -> "Console":
    """A terminal's own width (rich reads it, or $COLUMNS); off a terminal, `stdout_width()`, no colour."""
    from rich.console import Console

    class StdoutConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 here; a closed reader (`| head -1`) is the CLI's to end, quietly (harness/cli/app.py)
            raise BrokenPipeError(errno.EPIPE, "stdout closed by its reader")

    return StdoutConsole() if sys.stdout.isatty() else StdoutConsole(width=stdout_width(), no_color=True)


def rate_text(per_second: float, unit: str) -> str:
    """A rate for the progress line: `12.3 samples/s`, `412 bytes/s`."""
    return f"{per_second:.0f} {unit}/s" if per_second >= 100 else f"{per_second:.1f} {unit}/s"


def accuracy_text(hits: int, judged: int) -> str:
    """The running accuracy of a progress line, `acc 93.1 %`; empty while nothing is judged."""
    return f"acc {percent(hits / judged)} %" if judged else ""


def eta_text(seconds: float | None) -> str:
    """`eta 0:01:05`, or `eta -:--:--` while unknown."""
    if seconds is None:
        return "eta -:--:--"
    whole = round(seconds)
    return f"eta {whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def progress_figures(
    unit: str, per_second: float | None, hits: int, judged: int, seconds_left: float | None
) -> list[str]:
    """What a progress line shows after done/total: the rate, the running accuracy and the ETA, as known."""
    rate = None if per_second is None else rate_text(per_second, unit)
    return [text for text in (rate, accuracy_text(hits, judged), eta_text(seconds_left)) if text]


@contextmanager
def progress(total: int, label: str, unit: str = "samples") -> Iterator:
    """Yields advance(amount=1, hit=None): call it as work finishes, with `hit` True or False where a
    finished item was judged right or wrong (the running accuracy counts those). On a terminal, a bar of
    done/total, rate, accuracy and ETA (harness/progress_bar.py); in CI or a log, a line per tenth."""
    if is_quiet():
        yield lambda amount=1, hit=None: None
        return
    if interactive():
        from harness.progress_bar import progress_bar

        with progress_bar(label, partial(progress_figures, unit)) as bar:
            task = bar.add_task(label, total=total, hits=0, judged=0)
            tally = {"hits": 0, "judged": 0}

            def advance_bar(amount: int = 1, hit: bool | None = None) -> None:
                if hit is not None:
                    tally["judged"] += 1
                    tally["hits"] += bool(hit)
                bar.update(task, advance=amount, **tally)

            yield advance_bar
        return
    start = time.monotonic()
    done = hits = judged = 0
    step = max(1, total // 10)

    def advance(amount: int = 1, hit: bool | None = None) -> None:
        nonlocal done, hits, judged
        if hit is not None:
            judged, hits = judged + 1, hits + bool(hit)
        before, done = done, min(total, done + amount)
        if done == before:  # past an estimated total: nothing new to say
            return
        if done // step > before // step or done == total:
            elapsed = max(time.monotonic() - start, 1e-9)
            figures = progress_figures(unit, done / elapsed, hits, judged, elapsed / done * (total - done))
            line = ", ".join([f"{done}/{total} ({100 * done // total}%)", *figures])
            print(f"{label}: {line}", file=sys.stderr, flush=True)

    yield advance
