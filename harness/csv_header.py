"""The one check every CSV reader with a header makes of it: each column named once. A second `prediction`
column would silently win over the first (csv.DictReader keeps the last), so which one counts is a guess."""

from pathlib import Path

from harness.errors import UserError


def refuse_duplicate_columns(header: list[str] | None, kind: str, path: Path) -> None:
    """Refuse a header that names a column twice, naming the file (as `kind`) and the column."""
    seen: set[str] = set()
    for column in (c.strip() for c in header or ()):
        if column in seen and column:  # empty names (trailing commas) name no column
            raise UserError(f"{kind} {path} names the column {column!r} twice in its header; keep one")
        seen.add(column)
