"""`harness cache`: what the input cache holds, and pruning it (the cache and rich are imported once the
command line is found sound: a refusal is one quick line)."""

import time
from typing import TYPE_CHECKING

from harness.console import print_json, stdout_console
from harness.errors import UserError

if TYPE_CHECKING:
    from harness.eval.input_cache import CacheEntry


def _row(entry: "CacheEntry") -> dict:
    return {
        "key": entry.key,
        "samples": entry.samples,
        "stored": entry.stored,
        "dtype": entry.dtype,
        "bytes": entry.bytes,
        "bytes_per_sample": entry.bytes_per_sample,
        "last_used": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(entry.last_used)),
    }


def _table(title: str, entries: list["CacheEntry"]):
    """Two tables keyed by the entry's key (24 hex digits, never folded): its size and last use, then how its
    samples are stored; one table of all six columns is some 100 wide."""
    from rich.console import Group
    from rich.table import Table

    sizes = Table(title=title, title_justify="left")
    stores = Table(title="how each entry is stored", title_justify="left")
    for table in (sizes, stores):
        table.add_column("key", no_wrap=True)
    sizes.add_column("samples", justify="right", no_wrap=True)
    sizes.add_column("bytes", justify="right", no_wrap=True)
    sizes.add_column("last used (UTC)", no_wrap=True)
    stores.add_column("stored as", no_wrap=True)
    stores.add_column("B/sample", justify="right", no_wrap=True)
    for entry in entries:
        stored = f"{entry.stored} (as {entry.dtype})" if entry.stored and entry.stored != entry.dtype else entry.stored
        sizes.add_row(
            entry.key,
            "stale" if entry.samples is None else f"{entry.samples:,}",
            f"{entry.bytes:,}",
            time.strftime("%Y-%m-%d %H:%M", time.gmtime(entry.last_used)),
        )
        stores.add_row(
            entry.key,
            stored or "-",
            "-" if entry.bytes_per_sample is None else f"{entry.bytes_per_sample:,.0f}",
        )
    return Group(sizes, stores) if entries else sizes


def cmd_cache_list(args) -> int:
    from harness.eval.input_cache import list_entries, tensors_dir

    entries = list_entries()
    if args.json:
        print_json({"folder": str(tensors_dir()), "entries": [_row(e) for e in entries]})
        return 0
    console = stdout_console()
    console.print(_table(f"input cache in {tensors_dir()}", entries))
    total = sum(e.bytes for e in entries)
    console.print(f"{len(entries)} entries, {total:,} bytes; `harness cache prune --older-than DAYS` frees space")
    return 0


def cmd_cache_prune(args) -> int:
    if args.older_than is None and not args.all:
        raise UserError("say what to prune: --older-than DAYS (unused that long) or --all")
    from harness.eval.input_cache import prune, tensors_dir

    removed = prune(args.older_than, args.all, args.dry_run)
    freed = sum(e.bytes for e in removed)
    if args.json:
        print_json({"dry_run": args.dry_run, "removed": [_row(e) for e in removed], "bytes": freed})
        return 0
    verb = "would remove" if args.dry_run else "removed"
    print(f"{verb} {len(removed)} entries, {freed:,} bytes, from {tensors_dir()}")
    return 0
