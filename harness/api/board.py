"""`open_board`: a board named once (by board file, port, URL or labgrid place) for the evals, timings and
streams that follow. Opening checks the board and how it is reached, before anything starts; each call then
starts (virtual, QEMU, hosted) or connects (real, labgrid) the board through its driver
(harness/device/drivers/) for that call's model, and stops or releases it when the call ends."""

from pathlib import Path

from harness.api.evaluation import Notes, evaluate
from harness.api.measure import perf, profile
from harness.api.runs import EvalRun, StreamRun
from harness.api.streaming import stream
from harness.defaults import DEFAULT_MODEL, DEMO
from harness.errors import UserError, setting

# The settings that say which board a run uses and how it is reached (harness/eval/settings.py).
BOARD_SETTINGS = (
    "board",
    "port",
    "serial",
    "boards",
    "labgrid_place",
    "labgrid_tags",
    "protocol",
    "baud",
    "link_baud",
    "emulate_invoke_ms",
    "switch_baud",
    "faults",
    "tflm",
)


class Board:
    """A board as `open_board` named it: `evaluate`, `perf`, `profile` and `stream` run on it. Use it in a
    `with` block (or call `close()`): a closed board refuses further calls."""

    def __init__(self, settings):
        """Made by open_board, which checks the settings first."""
        self._settings = settings  # EvalSettings: the board's settings, the others at their defaults
        self._closed = False

    @property
    def name(self) -> str:
        """The board file's id (sim, qemu_m7, nucleo_h743, …)."""
        return self._checked().board

    @property
    def settings(self) -> dict:
        """How the board is reached, as the settings' names give it (only those not at their default)."""
        from harness.eval.settings import EvalSettings

        default = EvalSettings()
        return {
            n: getattr(self._settings, n) for n in BOARD_SETTINGS if getattr(self._settings, n) != getattr(default, n)
        }

    def _checked(self):
        if self._closed:
            raise UserError(f"board {self._settings.board} was closed; open it again with harness.open_board")
        return self._settings

    def _one(self, what: str) -> None:
        settings = self._checked()
        several = settings.boards > 1 or settings.labgrid_tags or "," in (settings.port or "")
        if several or settings.labgrid_place or settings.faults:
            raise UserError(
                f"{what} times one board reached by its port: open the board without {setting('boards')}, "
                f"{setting('labgrid_tags')}, {setting('labgrid_place')} or {setting('faults')}"
            )

    def evaluate(
        self,
        model: str = DEFAULT_MODEL,
        dataset: str = DEMO,
        subsets: str | list[str] = "all",
        *,
        results: str | Path | None = None,
        progress: bool = False,
        notes: Notes | None = None,
        **settings,
    ) -> EvalRun:
        """Evaluate on this board: harness.evaluate with the board's settings (see it for the others)."""
        self._checked()
        wrong = sorted(set(settings) & set(BOARD_SETTINGS))
        if wrong:
            raise UserError(f"{', '.join(wrong)} belong to the board: give them to harness.open_board")
        return evaluate(
            model, dataset, subsets, results=results, progress=progress, notes=notes, **self.settings, **settings
        )

    def _link(self, *names: str) -> dict:
        settings = self._checked()
        return {name: getattr(settings, name) for name in ("board", "port", "protocol", "tflm", *names)}

    def perf(self, model: str = DEFAULT_MODEL, **options):
        """Time repeated invokes of one input on this board: harness.api.perf (runs, warmups, mlperf, meter,
        model_file, dataset, progress) with the board's settings."""
        self._one("perf")
        return perf(model, **self._link("baud", "emulate_invoke_ms"), **options)

    def profile(self, model: str = DEFAULT_MODEL, **options):
        """Time one invoke operator by operator on this board: harness.api.profile with the board's settings."""
        self._one("profile")
        return profile(model, **self._link("baud"), **options)

    def stream(self, wav: str | Path, **options) -> StreamRun:
        """A WAV through the keyword pipeline on this board: harness.api.stream with the board's settings."""
        self._one("stream")
        return stream(wav, **self._link("serial"), **options)

    def close(self) -> None:
        """Nothing runs between calls (each starts and stops its board); a closed board refuses calls."""
        self._closed = True

    def __enter__(self) -> "Board":
        self._checked()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={v!r}" for n, v in self.settings.items() if n != "board")
        return f"<Board {self._settings.board}{' ' + shown if shown else ''}{' (closed)' if self._closed else ''}>"


def open_board(
    name: str | None = None,
    *,
    port: str | None = None,
    url: str | None = None,
    labgrid_place: str | None = None,
    **settings,
) -> Board:
    """A board to run on, checked now: `name` a board file's id or path (default: sim, the virtual board;
    `qemu_m7` a QEMU board); a real board's `port` (a device path; comma-separated: several boards of the
    kind) or `url` (any pyserial URL: rfc2217://host:port, socket://…), or a labgrid farm's
    `labgrid_place`. The other `settings` are the board's (serial, boards, labgrid_tags, protocol, baud,
    link_baud, emulate_invoke_ms, switch_baud, faults, tflm). A real board needs its board file's name
    beside the port, URL or place: the file says how to talk to it."""
    from harness.api.resolve import checked_boards
    from harness.defaults import DEFAULT_BOARD
    from harness.eval.settings import EvalSettings

    if port and url:
        raise UserError(f"name the board's link once: {setting('port')} or {setting('url')}, not both")
    reached = port or url
    if name is None and (reached or labgrid_place or settings.get("labgrid_tags")):
        how = f"{setting('url')} {url}" if url else setting("labgrid_place") if labgrid_place else setting("port")
        raise UserError(
            f"a board reached by {how} needs its board file: name it, e.g. open_board('nucleo_h743', ...) "
            "(`harness boards` lists them)"
        )
    unknown = sorted(set(settings) - set(BOARD_SETTINGS))
    if unknown:
        raise UserError(
            f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a board setting; the board's are: "
            f"{', '.join(BOARD_SETTINGS[1:])} (the run's go to evaluate)"
        )
    chosen = EvalSettings.from_keywords(
        board=name or DEFAULT_BOARD, port=reached, labgrid_place=labgrid_place, **settings
    )
    checked_boards(chosen)
    return Board(chosen)
