"""The one pattern every board, model and run id matches: what makes it safe as a folder name.

An id starts with a letter or digit and holds only letters, digits, '_', '-' and '.' (at most 64 characters): no
'/', no '..' on its own, no newline or space, so a folder named from it always lies where it is put
(docs/boards.md, docs/cli.md). A run id joins two ids (<stamp>-<model id>-<board id>-<4 hex>), so it may be longer
(`RUN_ID_PATTERN`), in the same characters."""

import re
import unicodedata

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


# A run id: <stamp>-<model id>-<board id>-<4 hex>, so longer than one id may be, in the ids' characters. At most
# 200 characters: the hidden .<run-id>.partial folder name stays within the 255 bytes a file name may have.
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
RUN_ID_RULE = "up to 200 letters, digits, '_', '-' or '.', starting with a letter or digit"
# The shape of the run ids harness makes (harness/results/store.py new_run_id): a folder so named is that run.
MADE_RUN_ID = re.compile(r"\d{8}T\d{6}Z-[A-Za-z0-9_.-]+-[0-9a-f]{4}")


def check_run_id(run_id: object, where: str = "") -> str:
    """run_id, if a run folder may be named after it; else one line with the rule."""
    if not isinstance(run_id, str) or RUN_ID_PATTERN.fullmatch(run_id) is None:
        place = f"{where}: " if where else ""
        raise UserError(f"{place}run id {run_id!r} is not a valid run id ({RUN_ID_RULE})")
    return run_id


# Characters a terminal or an editor acts on instead of showing: controls (a newline, ESC), format characters (a
# right-to-left override, a zero-width space), line and paragraph separators. No id, label or path holds one.
ACTED_ON = frozenset({"Cc", "Cf", "Zl", "Zp"})


def is_acted_on(ch: str) -> bool:
    return unicodedata.category(ch) in ACTED_ON


def has_acted_on(text: str) -> bool:
    return any(is_acted_on(ch) for ch in text)


def shown(text: str) -> str:
    """text as a terminal can print it: every character it would act on as its escape (a newline as \\n, ESC as
    \\x1b), for names harness did not make (a folder's name) and one-line messages."""
    if not has_acted_on(text):
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if is_acted_on(ch) else ch for ch in text)
