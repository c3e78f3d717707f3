"""Values typed on the command line: numbers in range, seeds, baud rates, host reference names, link fault
specs, port URLs, paths. Each is an argparse type: bad text is refused in one line naming what was expected.
They live below the command line so that settings declared elsewhere (harness/eval/settings.py) can name them.

A number is typed in ASCII digits (Python's int() reads an Arabic-Indic one as 1; a user did not mean it), is
finite, and lies in the range its type declares (`Bounded`): the option's help and docs/cli.md's "Option ranges"
table are made from that one declaration (tests/unit/cli/test_option_ranges.py keeps the table in step and checks
that every numeric option has a bounded type)."""

import argparse
from dataclasses import dataclass

from harness.defaults import MAX_BAUD, REFERENCE_NAMES
from harness.digits import ascii_float, ascii_int
from harness.errors import UserError
from harness.link.port_urls import PORT_FORMS, port_url_problem
from harness.names import has_acted_on


def _shown(number: float) -> str:
    if number == (1 << 63) - 1:
        return "2^63-1"
    if float(number).is_integer():
        return f"{int(number):,}"
    return f"{number:g}"


@dataclass(frozen=True)
class Bounded:
    """An argparse type for a number in a declared range: whole (`whole`) or finite real, from `low` (excluded
    when `above`) to `high`. `noun` names what is expected in the refusal ("a baud rate: a whole number");
    `span` words the range "from L to H" rather than "of at least L and at most H", `terse` leaves the range to
    the noun ("a port number 0..65535"); `note` says what a special value means ("0: unpaced")."""

    noun: str
    low: float
    high: float
    whole: bool = True
    above: bool = False
    span: bool = False
    terse: bool = False
    note: str = ""

    @property
    def __name__(self) -> str:  # argparse names a type by it
        return self.noun

    def range_text(self) -> str:
        """The range as --help and docs/cli.md show it, e.g. "1 to 64" or "above 0 to 86,400"."""
        text = f"{'above ' if self.above else ''}{_shown(self.low)} to {_shown(self.high)}"
        return f"{text} ({self.note})" if self.note else text

    def expected(self) -> str:
        if self.terse:
            words = ""
        elif self.span:
            words = f"from {_shown(self.low)} to {_shown(self.high)}"
        else:
            words = f"{'above' if self.above else 'of at least'} {_shown(self.low)} and at most {_shown(self.high)}"
        return " ".join(filter(None, (self.noun, words))) + (f" ({self.note})" if self.note else "")

    def __call__(self, text: str):
        try:
            value = ascii_int(text) if self.whole else ascii_float(text)
        except ValueError:
            value = None
        low_ok = value is not None and (value > self.low if self.above else value >= self.low)
        if not low_ok or value > self.high:
            raise argparse.ArgumentTypeError(f"expected {self.expected()}, got {text!r}")
        return value


@dataclass(frozen=True)
class WordOrBounded:
    """An argparse type for a number in a declared range, or one word standing for a rule ("ilsvrc"); kept as
    the text given (the command reads the number from it)."""

    word: str
    bounded: Bounded
    flag: str  # the option, named in the refusal

    @property
    def __name__(self) -> str:
        return self.bounded.noun

    def range_text(self) -> str:
        return f"{self.word}, or {self.bounded.range_text()}"

    def __call__(self, text: str) -> str:
        if text.strip() == self.word:
            return self.word
        try:
            self.bounded(text)
        except argparse.ArgumentTypeError:
            expected = f"neither {self.word!r} nor {self.bounded.expected()}"
            raise argparse.ArgumentTypeError(f"{self.flag} {text!r} is {expected}") from None
        return text


# Every numeric option's range, declared once here and named by the option's declaration.
MAX_BOARDS = 64  # boards one run deals its samples among
DAY_SECONDS = 86_400
HOUR_MS = 3_600_000

seed_number = Bounded("a seed: a whole number", 0, (1 << 63) - 1)
sample_count = Bounded("a number of samples: a whole number", 1, 100_000_000)
traced_samples = Bounded("a number of samples: a whole number", 0, 1000, note="0: none")
board_count = Bounded("a number of boards: a whole number", 1, MAX_BOARDS)
serial_baud = Bounded("a baud rate: a whole number", 1, MAX_BAUD)
link_baud_rate = Bounded("a baud rate: a whole number", 0, MAX_BAUD, note="0: unpaced")
switch_baud_rate = Bounded("a baud rate: a whole number", 0, MAX_BAUD, note="0: stay")
invoke_ms = Bounded("a number of milliseconds", 0, HOUR_MS, whole=False, span=True)
timed_runs = Bounded("a number of invokes: a whole number", 1, 1_000_000)
warmup_runs = Bounded("a number of invokes: a whole number", 0, 1_000_000)
window_seconds = Bounded("a number of seconds", 0, 3600, whole=False, above=True)
link_bytes = Bounded("a number of bytes: a whole number", 1, 1 << 30)
fetch_bytes = Bounded("a number of bytes: a whole number", 0, 1 << 30, note="0: digests only")
relative_change = Bounded("a relative change", 0, 1000, whole=False, note="0.02: 2 percent")
calibration_samples = Bounded("a number of samples: a whole number", 1, 1_000_000)
held_out_samples = Bounded("a number of samples: a whole number", 1, 1_000_000)
clip_count = Bounded("a number of clips: a whole number", 1, 100_000)
gap_ms = Bounded("a number of milliseconds: a whole number", 0, HOUR_MS)
clip_start_ms = Bounded("a start in milliseconds: a whole number", 0, HOUR_MS)
stream_ms = Bounded("a stream length in milliseconds: a whole number", 1, HOUR_MS)
exposure_ms = Bounded("an exposure in milliseconds: a whole number", 1, 365 * DAY_SECONDS * 1000)
tolerance_ms = Bounded("a number of milliseconds", 0, HOUR_MS)
decibels = Bounded("a number of decibels", -200, 200, whole=False, span=True)
meter_seconds = Bounded("a number of seconds", 0, DAY_SECONDS, whole=False, above=True)
session_seconds = Bounded("a number of seconds", 0, DAY_SECONDS, whole=False, above=True)
linger_seconds = Bounded("a number of seconds", 0, 3600, whole=False)
results_seconds = Bounded("a number of seconds", 0, DAY_SECONDS, whole=False)
image_count = Bounded("a number of images: a whole number", 1, 100_000_000)
port_number = Bounded("a port number 0..65535", 0, 65535, terse=True, note="0: any free port")
age_days = Bounded("a number of days", 0, 36_500, whole=False)


def _repeated(names) -> list[str]:
    seen: set[str] = set()
    return [name for name in names if name in seen or seen.add(name)]


def reference_names(text: str) -> tuple[str, ...]:
    if text.strip() == "none":  # the board alone: no host inference
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in REFERENCE_NAMES]
    repeated = _repeated(names)
    if unknown or repeated or not names:
        problems = [f"unknown reference {', '.join(unknown)}"] if unknown else []
        problems += [f"{', '.join(dict.fromkeys(repeated))} named twice"] if repeated else []
        problems = problems or [f"no reference in {text!r}"]
        raise argparse.ArgumentTypeError(
            f"{'; '.join(problems)}; valid: {', '.join(REFERENCE_NAMES)}, each once, or none"
        )
    return names


def distinct_names(text: str) -> str:
    """A comma-separated list of names (subsets, splits, words, serial numbers, places): each at most once."""
    names = name_list(text)
    if not names:
        raise argparse.ArgumentTypeError(f"expected names, comma-separated, got {text!r}")
    repeated = _repeated(names)
    if repeated:
        raise argparse.ArgumentTypeError(
            f"{', '.join(dict.fromkeys(repeated))} named twice in {text!r}: name each once"
        )
    return text


def clip_placements(text: str) -> str:
    """stream build --at: label:start_ms items, comma-separated, each start within `clip_start_ms` (a start
    beyond it would make a stream too long to hold); kept as given."""
    items = name_list(text)
    for item in items:
        label, _, start = item.rpartition(":")
        try:
            clip_start_ms(start)
        except argparse.ArgumentTypeError:
            label = ""
        if not label.strip():
            raise argparse.ArgumentTypeError(
                f"item {item!r} is not label:start_ms with start_ms from 0 to {HOUR_MS:,} (e.g. yes:1000,no:3500)"
            )
    if not items:
        raise argparse.ArgumentTypeError(f"expected label:start_ms items (e.g. yes:1000,no:3500), got {text!r}")
    return text


def place_tags(text: str) -> str:
    """labgrid place tags, `key=value` comma-separated (e.g. board=nucleo_h743,lab=2): kept as given."""
    pairs = [part.strip() for part in text.split(",") if part.strip()]
    if not pairs or not all(_is_tag(pair) for pair in pairs):
        raise argparse.ArgumentTypeError(f"expected tags as key=value[,key=value], got {text!r}")
    keys = [pair.partition("=")[0].strip() for pair in pairs]
    if _repeated(keys):
        raise argparse.ArgumentTypeError(f"tag {', '.join(dict.fromkeys(_repeated(keys)))} given twice in {text!r}")
    return ",".join(pairs)


def _is_tag(pair: str) -> bool:
    key, equals, value = pair.partition("=")
    return bool(equals) and key.strip().isidentifier() and bool(value.strip()) and "=" not in value


def tag_filter(text: str) -> dict[str, str]:
    """place_tags' text as the key -> value filter a labgrid reservation takes."""
    return {key.strip(): value.strip() for key, _, value in (pair.partition("=") for pair in text.split(","))}


def name_list(text: str | None) -> list[str]:
    """A comma-separated list (several --port, --serial or --labgrid-place values), blanks dropped."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def port_names(text: str) -> str:
    """--port: a device or pyserial URL, or several comma-separated; kept as given."""
    import os

    custom = bool(os.environ.get("HARNESS_URL_HANDLERS", "").strip())
    for url in name_list(text) or [text]:
        problem = port_url_problem(url, custom)
        if problem:
            raise argparse.ArgumentTypeError(f"cannot open link {url!r}: {problem}; check the port: use {PORT_FORMS}")
    return text  # a port named twice is refused with the boards (harness/device/fleet.py)


def run_reference(text: str) -> str:
    """--resume RUN: an unfinished run's id or its .partial folder (resolved when the run is resumed)."""
    return text


run_reference.when_empty = "--resume needs the id of an unfinished run (its id under --results, or its .partial folder)"


def path_text(text: str) -> str:
    """A path option's text: never empty (an empty --results would mean the working folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the path is empty; name a file or folder")
    if "\x00" in text:
        raise argparse.ArgumentTypeError(f"the path {text!r} holds a NUL byte")
    if has_acted_on(text):
        raise argparse.ArgumentTypeError(f"the path {text!r} holds a control character; name a plain path")
    return text


@dataclass(frozen=True)
class OutputPath:
    """An argparse type for an option naming what a command writes: a file (nothing there yet, or a regular
    file: never a device, FIFO, socket or folder) or a folder (a folder, or nothing there yet), checked before
    any work is done and kept as given (harness/files.py checks again as it writes). `fix` ends the refusal:
    what to pass instead ("a file to write as --out STREAM.wav")."""

    folder: bool
    fix: str

    @property
    def __name__(self) -> str:
        return "output_folder" if self.folder else "output_file"

    def __call__(self, text: str) -> str:
        from harness.files import check_output, check_output_folder

        try:
            if self.folder:
                check_output_folder(path_text(text), "the folder")
            else:
                check_output(path_text(text), "the file")
        except UserError as exc:
            why = exc.worded_for_cli().split("; ")[0]
            raise argparse.ArgumentTypeError(f"{why}; pass {self.fix}") from None
        return text


def output_file(example: str) -> OutputPath:
    return OutputPath(folder=False, fix=f"a file to write as {example}")


def output_folder(option: str) -> OutputPath:
    return OutputPath(folder=True, fix=f"a writable {option}")


iou_rule = WordOrBounded("ilsvrc", Bounded("a number in (0, 1]", 0, 1, whole=False, above=True, terse=True), "--iou")
