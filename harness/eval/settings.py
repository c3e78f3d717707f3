"""The settings of `harness eval`, each declared once, here: its flag, parser, default and help text.

From this one declaration come the eval command's arguments (`add_arguments`), the settings a run keeps in
its partial folder for `--resume` and in its manifest (`EvalSettings.stored` / `EvalSettings.restored`:
each setting as the JSON of its type), and the settings an EvalRequest carries (harness/eval/runner.py).
`--results`, `--resume`, `--json` and `--quiet` are not settings: they say where and how this command
runs, not what the run is, so a resumed run takes them from the command that resumes it."""

import argparse
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Light imports only: every command's parser is built from these declarations (harness/cli/app.py), so what they
# need comes from harness/defaults.py, not from the modules that own it (pydantic is imported where it is used).
from harness.defaults import (
    AUTO_POOL_SAMPLES,
    BOARD_HELP,
    DEFAULT_BOARD,
    DEFAULT_MODEL,
    DEFAULT_REFERENCES,
    DEMO,
    PORT_HELP,
)
from harness.errors import UserError, setting
from harness.link.faults import FaultSpec, fault_spec
from harness.link.registry import NATIVE_PROTOCOL, PROTOCOL_NAMES
from harness.values import (
    board_count,
    distinct_names,
    invoke_ms,
    link_baud_rate,
    path_text,
    place_tags,
    port_names,
    reference_names,
    sample_count,
    seed_number,
    serial_baud,
    switch_baud_rate,
    traced_samples,
)


@dataclass(frozen=True)
class Flag:
    """How a setting appears on the command line (argparse's own terms)."""

    help: str
    flag: str | None = None  # default: --the-name-with-dashes
    type: Callable[[str], Any] | None = None
    switch: bool = False  # a flag without a value: True when given
    choices: tuple[str, ...] | None = None
    nargs: str | None = None
    const: Any = None
    metavar: str | None = None
    given: Callable[[Any], Any] | None = None  # the command line's value as the run keeps it
    negatable: bool = False  # a switch with a --no- form: True, False, or the default when neither is given


_NOT_GIVEN = object()


def option(help: str, default: Any = None, earlier: Any = _NOT_GIVEN, **flag) -> Any:
    """A field of EvalSettings with its command-line flag. `earlier`: the value a run folder of an earlier
    version, which lacks the setting, ran with, where that is not the default."""
    metadata = {"flag": Flag(help, **flag)} | ({} if earlier is _NOT_GIVEN else {"earlier": earlier})
    return dataclasses.field(default=default, metadata=metadata)


def _drawn_seed(value: int | None) -> int | None:
    """`--shuffle` without a seed draws one, kept with the settings so a resumed run keeps the same order."""
    from harness.eval.order import new_seed

    return new_seed() if value == -1 else value


# Settings earlier versions stored that EvalSettings no longer declares: a run that holds one still resumes (a
# setting removed from EvalSettings is named here).
RETIRED_SETTINGS: frozenset[str] = frozenset()

TFLM_HELP = "TFLM tree for QEMU firmware builds (default: $HARNESS_TFLM_TREE, else the board's [tflm] tree)"


@dataclass(frozen=True)
class EvalSettings:
    board: str = option(BOARD_HELP, DEFAULT_BOARD)
    model: str = option("model card name or card .toml path", DEFAULT_MODEL, type=path_text)
    model_file: str | None = option(
        "a .tflite to use instead of the card's own file (same preprocessing)", type=path_text
    )
    port: str | None = option(
        f"{PORT_HELP}; comma-separated: several boards of the board's kind share the run's samples",
        type=port_names,
    )
    serial: str | None = option(
        "with several boards of a kind attached: the USB serial number to use; comma-separated: use each"
    )
    boards: int = option(
        "deal the samples among this many boards of the kind: virtual, QEMU and hosted boards are started "
        "that many times; with --labgrid-tags, this many places are reserved",
        1,
        type=board_count,
        metavar="N",
    )
    dataset: str = option(
        "'demo', a folder (published Wake Vision layout, or labels.csv + images/), or hf:Harvard-Edge/Wake-Vision",
        DEMO,
    )
    subset: str = option("comma-separated subsets (see `harness dataset subsets`)", "all", type=distinct_names)
    split: str | None = option(
        "split(s) of a published-layout dataset, e.g. test or test,validation", type=distinct_names
    )
    clean_labels: str | None = option(
        "cleaned label CSVs (wv_{split}_cleaned.csv, or folders holding them; comma-separated) whose clean_label "
        "replaces the flag CSVs' person label (default: those beside a published layout's flag CSVs; 'none': none)",
        metavar="PATH",
        type=distinct_names,
    )
    limit: int | None = option(
        "evaluate this many members of each subset, drawn by --seed in proportion to its classes (pools whole)",
        type=sample_count,
    )
    order: str = option(
        "sampled: --limit draws each subset's members; dataset: the first --limit samples in dataset order",
        "sampled",
        choices=("sampled", "dataset"),
        earlier="dataset",  # runs of earlier versions took the first samples
    )
    seed: int = option("seed of the --limit draw (default: 0)", 0, type=seed_number)
    pools: bool | None = option(
        "evaluate each subset's whole F1 negative pool (--limit never cuts it); default: added when there is no "
        f"--limit and the pools add at most {AUTO_POOL_SAMPLES:,} samples",
        earlier=False,  # runs of earlier versions added no pool unless asked to
        negatable=True,
    )
    strict: bool = option("stop at an unreadable image instead of skipping it", False, switch=True)
    references: tuple[str, ...] = option(
        f"host references, comma-separated, or none (default: {','.join(DEFAULT_REFERENCES)})",
        DEFAULT_REFERENCES,
        type=reference_names,
    )
    tflm: str | None = option(TFLM_HELP)
    protocol: str = option(
        "the board's wire protocol: harness firmware (default) or MLPerf Tiny / EEMBC DUT firmware",
        NATIVE_PROTOCOL,
        choices=PROTOCOL_NAMES,
    )
    baud: int | None = option(
        "real board: open its serial port at this baud rate (default: the board file's; with --protocol eembc, "
        "115200, the MLPerf Tiny reference firmware's)",
        type=serial_baud,
    )
    link_baud: int | None = option(
        "virtual board: pace its link like a UART at this baud rate (0: unpaced)", type=link_baud_rate
    )
    emulate_invoke_ms: float | None = option("virtual board: each inference takes at least this long", type=invoke_ms)
    switch_baud: int | None = option(
        "after the handshake, switch the link to this baud rate (0: stay)", type=switch_baud_rate
    )
    faults: FaultSpec | None = option(
        "inject link faults through a proxy, e.g. drop=1e-3,corrupt=1e-3,dup=1e-4,reset-every=200", type=fault_spec
    )
    labgrid_place: str | None = option(
        "a board in a labgrid farm: acquire the place, use its serial port; comma-separated: several places "
        "share the run's samples",
        metavar="NAME",
    )
    labgrid_tags: str | None = option(
        "reserve labgrid places by tag (e.g. board=nucleo_h743) and use them (--boards N: that many)",
        type=place_tags,
        metavar="KEY=VALUE",
    )
    meter: str | None = option("power meter KIND:ADDRESS for energy per inference (see docs/energy.md)")
    profile: bool = option(
        "after the samples, time the first sample's invoke operator by operator and keep it with the run "
        "(QEMU and real boards; the report shows it)",
        False,
        switch=True,
    )
    trace_layers: int = option(
        "after the samples, trace the first N samples whose output differs from the host's layer by layer and "
        "keep the traces with the run: the first operator that departs (docs/debug.md)",
        0,
        type=traced_samples,
        metavar="N",
    )
    order_seed: int | None = option(
        "shuffle samples in small groups (seed)",
        flag="--shuffle",
        type=seed_number,
        nargs="?",
        const=-1,
        metavar="SEED",
        given=_drawn_seed,
    )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "EvalSettings":
        """The settings this command line gives (a --shuffle without a seed draws it now)."""
        values = {}
        for f in dataclasses.fields(cls):
            value = getattr(args, f.name)
            given = f.metadata["flag"].given
            values[f.name] = given(value) if given else value
        return cls(**values)

    @classmethod
    def from_keywords(cls, **values) -> "EvalSettings":
        """The settings a Python caller names (harness/api): each keyword a setting, its value as the flag's
        text or as the setting's own type, checked as the command line checks it; an unknown keyword or a
        bad value is a UserError naming the setting."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise UserError(f"unknown setting {', '.join(unknown)}; the settings are: {', '.join(fields)}")
        given = {name: _keyword_value(name, fields[name].metadata["flag"], value) for name, value in values.items()}
        return cls(**given)

    def stored(self) -> dict:
        """The settings as JSON, for request.json (what --resume reloads) and the run manifest."""
        return _adapter().dump_python(self, mode="json")

    @classmethod
    def restored(cls, stored: dict, where: str = "request.json") -> "EvalSettings":
        """The settings a run kept. Run folders of earlier versions hold the same names (a setting they lack
        takes the value those versions ran with, else its default; one retired since is ignored); any other name
        is damage."""
        import pydantic

        declared = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(stored) - declared - RETIRED_SETTINGS)
        if unknown:
            what = f"setting {unknown[0]!r} is not one harness has (the file was edited)"
            raise UserError(f"{where}: {what}; start a new run")
        stored = {name: value for name, value in stored.items() if name in declared}
        earlier = {f.name: f.metadata["earlier"] for f in dataclasses.fields(cls) if "earlier" in f.metadata}
        try:
            settings = _adapter().validate_python(earlier | stored)
        except pydantic.ValidationError as exc:
            error = exc.errors()[0]
            name = ".".join(str(part) for part in error["loc"])
            raise UserError(f"{where}: setting {name} is damaged ({error['msg']}); start a new run") from None
        for f in dataclasses.fields(cls):  # in range as its flag declares it (harness/values.py), names once each
            value = getattr(settings, f.name)
            try:
                _keyword_value(f.name, f.metadata["flag"], value)
            except UserError as exc:
                raise UserError(f"{where}: setting {f.name} is damaged ({exc}); start a new run") from None
        return settings


def _keyword_value(name: str, flag: Flag, value: Any) -> Any:
    """A keyword's value as the run keeps it: text, numbers and sequences of names through the flag's parser."""

    if flag.given:
        value = flag.given(value)
    if flag.type is None or value is None:
        return value
    if isinstance(value, list | tuple):
        text = ",".join(str(item) for item in value) or "none"
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value)
    else:
        return value  # already of the setting's type (a FaultSpec)
    try:
        return flag.type(text)
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"{setting(name)}: {exc}") from None


@functools.cache
def _adapter():
    """The settings' pydantic adapter, made the first time a run stores or restores them (not to parse a flag)."""
    import pydantic

    return pydantic.TypeAdapter(EvalSettings)


# The settings of the link, which `harness link-test` takes too.
LINK_SETTINGS = ("baud", "link_baud", "emulate_invoke_ms", "switch_baud", "labgrid_place", "faults")


def add_arguments(parser: argparse.ArgumentParser, names: tuple[str, ...] | None = None) -> None:
    """The declared settings (or those named) as the parser's arguments; each value lands under its name."""
    for f in dataclasses.fields(EvalSettings):
        if names is not None and f.name not in names:
            continue
        flag: Flag = f.metadata["flag"]
        option = flag.flag or "--" + f.name.replace("_", "-")
        if flag.switch:
            parser.add_argument(option, dest=f.name, action="store_true", help=flag.help)
            continue
        if flag.negatable:
            parser.add_argument(option, dest=f.name, action=argparse.BooleanOptionalAction, help=flag.help)
            continue
        extra = {key: getattr(flag, key) for key in ("type", "choices", "nargs", "const", "metavar")}
        extra = {key: value for key, value in extra.items() if value is not None}
        parser.add_argument(option, dest=f.name, default=f.default, help=flag.help, **extra)
