"""`harness cache`: the input cache of prepared tensors."""

from harness.cli.args import command, group
from harness.values import (
    age_days,
)


def add_cache(commands) -> None:
    cache = group(
        commands,
        "cache",
        "the input cache of prepared input tensors ($HARNESS_CACHE_DIR/tensors)",
        "harness cache prune --older-than 30",
    )
    command(cache, "list", "harness.cli.cache:cmd_cache_list", "list the input cache's entries", "harness cache list")
    prune = command(
        cache,
        "prune",
        "harness.cli.cache:cmd_cache_prune",
        "remove input cache entries",
        ("harness cache prune --older-than 30", "harness cache prune --all --dry-run"),
    )
    prune.add_argument("--older-than", type=age_days, metavar="DAYS", help="entries unused this long")
    prune.add_argument("--all", action="store_true", help="every entry")
    prune.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")
