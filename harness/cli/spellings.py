"""The command line's old spellings: from the flat list of commands to the groups (docs/cli.md). They work
for one more release and say their new spelling on stderr; a group given no subcommand runs its listing."""

# old first word -> the words that replace it
RENAMED = {
    "build": ("firmware", "build"),
    "generate": ("firmware", "generate"),
    "link-test": ("boards", "link-test"),
    "report": ("runs", "report"),
    "compare": ("runs", "compare"),
    "check": ("runs", "check"),
    "convert": ("models", "convert"),
    "inspect": ("models", "inspect"),
    "datasets": ("dataset", "list"),
    "subsets": ("dataset", "subsets"),
    "score": ("dataset", "score"),
    "stream-score": ("stream", "score"),
    "referee": ("lpirc", "referee"),
    "lpirc-score": ("lpirc", "score"),
    "map": ("lpirc", "map"),
}
# a group followed by flags, not a subcommand -> the subcommand it means
LISTINGS = {"boards": "list", "runs": "list", "models": "list", "dataset": "list", "cache": "list"}
OLD_DEFAULTS = {"stream": "run"}  # `harness stream --wav W` ran the stream: an old spelling


def modern_spelling(argv: list[str]) -> tuple[list[str], str | None]:
    """argv in today's spelling, and the deprecation notice when it was an old one."""
    if not argv:
        return argv, None
    first, rest = argv[0], argv[1:]
    if first in RENAMED:
        return [*RENAMED[first], *rest], _notice(first, " ".join(RENAMED[first]))
    flags_only = not rest or (rest[0].startswith("-") and rest[0] not in ("-h", "--help"))
    if first in LISTINGS and flags_only:
        return [first, LISTINGS[first], *rest], None
    if first in OLD_DEFAULTS and rest and flags_only:
        return [first, OLD_DEFAULTS[first], *rest], _notice(first, f"{first} {OLD_DEFAULTS[first]}")
    return argv, None


def _notice(old: str, new: str) -> str:
    return f"`harness {old}` is now `harness {new}`; the old spelling goes in the next release"
