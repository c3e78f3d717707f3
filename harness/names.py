"""The one pattern every board, model and run id matches: what makes it safe as a folder name.

An id starts with a letter or digit and holds only letters, digits, '_', '-' and '.' (at most 64 characters): no
'/', no '..' on its own, no newline or space, so a folder named from it always lies where it is put
(docs/boards.md, docs/cli.md)."""

import re

from harness.errors import UserError

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
ID_RULE = "1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit"


def is_valid_id(text: object) -> bool:
    return isinstance(text, str) and ID_PATTERN.fullmatch(text) is not None


def check_id(text: object, what: str, where: str = "") -> str:
    """text, if it is a valid id; else one line naming what it is and the rule."""
    if not is_valid_id(text):
        place = f"{where}: " if where else ""
        raise UserError(f"{place}{what} {text!r} is not a valid id ({ID_RULE})")
    return text
