"""One way out: every file harness writes is written here, atomically, and only ever over a regular file.

A reader never sees half a file (a ledger, a WAV, a model in the cache): the bytes go to a partial file beside
the target, which then replaces it in one step. Nothing but a regular file is ever replaced: a target that is a
device, a FIFO, a socket or a folder is refused (`check_output`, which commands call on their --out before any
work is done, and again just before the rename). A link is followed, so the file it names is what is written,
except inside a run folder (`follow_links=False`): there a link planted in place of a run file (summary.json ->
/etc/passwd) is itself replaced, and what it points at is never touched.
"""

import os
import stat
from collections.abc import Callable
from pathlib import Path

from harness.errors import UserError

FILE_TYPES = {  # what each type of file that is no regular file is called in messages (reading and writing)
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
    stat.S_IFLNK: "a link",  # seen only where a link is not followed (lstat)
}


def what_it_is(mode: int) -> str:
    """What a file of this st_mode is, for a message: 'a FIFO', 'a folder', 'a regular file'."""
    return "a regular file" if stat.S_ISREG(mode) else FILE_TYPES.get(stat.S_IFMT(mode), "an unknown type of file")


def partial_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.partial")


def check_output(target: Path | str, what: str = "output", follow_links: bool = True) -> Path:
    """target resolved through links, if it may be written: nothing there yet, or a regular file.

    Anything else (a device, a FIFO, a socket, a folder) is refused in one line naming it and the fix. With
    follow_links=False a link is not resolved: target itself is returned, and the link is what gets replaced."""
    if str(target) == "":
        raise UserError(f"the {what} path is empty; name a file")
    target = Path(target)
    resolved = Path(os.path.realpath(target)) if follow_links else target
    try:
        mode = os.stat(resolved).st_mode if follow_links else os.lstat(target).st_mode
    except FileNotFoundError:
        return resolved
    except OSError as exc:
        raise UserError(f"{what} {target} cannot be written ({exc.strerror}); name another file") from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):  # a link itself, when links are not followed
        raise UserError(f"{what} {target} is {what_it_is(mode)}; harness only ever replaces regular files: name a file")
    return resolved


def check_output_folder(folder: Path | str, what: str = "output folder") -> Path:
    """folder, if it is one or can be made: anything else there (a file, a device) is refused."""
    if str(folder) == "":
        raise UserError(f"the {what} path is empty; name a folder")
    folder = Path(folder)
    resolved = Path(os.path.realpath(folder))
    try:
        mode = os.stat(resolved).st_mode
    except FileNotFoundError:
        return resolved
    except OSError as exc:
        raise UserError(f"{what} {folder} cannot be used ({exc.strerror}); name a folder") from None
    if not stat.S_ISDIR(mode):
        raise UserError(f"{what} {folder} is {what_it_is(mode)}, not a folder; name a folder")
    return resolved


def write_atomically(
    target: Path, write: Callable[[Path], None], what: str = "output", follow_links: bool = True
) -> None:
    """write(partial) fills a temporary file next to target, which then replaces target in one step.

    follow_links=False (run folders): a link at target is replaced itself, never the file it points at."""
    target = check_output(target, what, follow_links)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(target)
    partial.unlink(missing_ok=True)  # ours by name: whatever is there (a planted link) is not written through
    try:
        write(partial)
        check_output(target, what, follow_links)  # it may have become something else while we wrote
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def write_bytes_atomically(target: Path, data: bytes, what: str = "output", follow_links: bool = True) -> None:
    write_atomically(target, lambda partial: partial.write_bytes(data), what, follow_links)


def write_text_atomically(target: Path, text: str, what: str = "output", follow_links: bool = True) -> None:
    write_atomically(target, lambda partial: partial.write_text(text, encoding="utf-8"), what, follow_links)
