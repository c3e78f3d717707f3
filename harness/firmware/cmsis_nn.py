"""Which CMSIS-NN sources a firmware needs: the files that define what its kernels call, transitively.

TFLM's CMSIS-NN kernels (tensorflow/lite/micro/kernels/cmsis_nn/*.cc) call the CMSIS-NN library's functions
(arm_convolve_wrapper_s8, ...), which call one another and read its tables. A firmware whose model has no
depthwise convolution never calls arm_depthwise_conv_*: the linker's --gc-sections drops that code anyway, so
compiling only the files that define the symbols the chosen kernels reach changes no byte of the firmware.

The symbols are read from the source text, which is exact enough for CMSIS-NN's plain C: a .c file defines the
names it declares at file scope outside `static` (functions and data); a header's static inline functions and
macros stand for the names in their bodies; a file needs every such name it mentions. Preprocessor branches
are not evaluated, so a file reached only from an unused branch (another CPU's code path) comes along: more
than needed, never less.
"""

import re
from functools import cached_property
from pathlib import Path

from harness.errors import UserError

# Comments, string and character literals: no names in them count.
_NOISE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n\\]|\\[\s\S])*", re.M)
_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)((?:[^\n\\]|\\[\s\S])*)", re.M)
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_FUNCTION_HEAD = re.compile(r"\b([A-Za-z_]\w*)\s*\([^{};]*\)\s*$", re.S)
_DATA_NAME = re.compile(r"\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?:=|$)", re.S)
_QUALIFIERS = re.compile(r"\b(?:static|extern|typedef)\b")
_TYPE_BLOCK = re.compile(r"\b(?:struct|union|enum)\b")


def _clean(text: str) -> str:
    return _NOISE.sub(" ", text)


def _top_level(code: str) -> list[tuple[str, str | None]]:
    """The file-scope declarations of preprocessed-away C: (what precedes the body or the `;`, the body or None).
    `extern "C" {` (its string is already blanked out) is transparent."""
    found, depth, start, body_start = [], 0, 0, 0
    head = ""
    for index, char in enumerate(code):
        if char == "{":
            if depth == 0:
                head = code[start:index]
                if head.strip() == "extern":  # extern "C" {: its contents are file scope
                    start = index + 1
                    continue
                body_start = index
            depth += 1
        elif char == "}":
            if depth == 0:  # the end of an extern "C" block
                start = index + 1
                continue
            depth -= 1
            if depth == 0:
                found.append((head, code[body_start : index + 1]))
                start = index + 1
        elif char == ";" and depth == 0:
            found.append((code[start:index], None))
            start = index + 1
    return found


class CmsisNnSources:
    """The CMSIS-NN library of a TFLM tree (its third_party/cmsis_nn), read once for its symbols."""

    def __init__(self, root: Path):
        self.root = Path(root)

    @cached_property
    def sources(self) -> list[Path]:
        return sorted((self.root / "Source").rglob("*.c"))

    @cached_property
    def _scan(self) -> tuple[dict[str, Path], dict[Path, tuple[set[str], set[str]]], dict[str, set[str]], set[str]]:
        """(external name -> the .c file defining it, .c file -> (names it mentions, names it calls), header
        inline function or macro -> names in its body, functions the headers declare)."""
        defined, mentions, inline, declared = {}, {}, {}, set()
        for source in self.sources:
            text = _clean(source.read_text(errors="replace"))
            mentions[source] = (set(_WORD.findall(text)), set(_CALL.findall(text)))
            for head, body in _top_level(_DIRECTIVE.sub(" ", text)):
                name = _external_name(head, body)
                if name:
                    defined.setdefault(name, source)
        for header in sorted(self.root.rglob("*.h")):
            text = _clean(header.read_text(errors="replace"))
            for name, definition in _MACRO.findall(text):
                inline.setdefault(name, set()).update(_WORD.findall(definition))
            for head, body in _top_level(_DIRECTIVE.sub(" ", text)):
                function = _FUNCTION_HEAD.search(head)
                if function is None or _TYPE_BLOCK.search(head) or "typedef" in head:
                    continue
                if body is None:
                    declared.add(function.group(1))
                else:
                    inline.setdefault(function.group(1), set()).update(_WORD.findall(body))
        return defined, mentions, inline, declared

    def needed(self, users: dict[Path, str]) -> list[Path]:
        """The CMSIS-NN sources that `users` (file -> its text) reach, in the library's order. A call of a
        function the headers declare and no source defines is an error naming it and the file that calls it."""
        defined, mentions, inline, declared = self._scan
        known = defined.keys() | inline.keys()
        seen, files, queue = set(), set(), []

        def reach(user: Path, words: set[str], calls: set[str]) -> None:
            missing = sorted(calls & declared - known)
            if missing:
                raise UserError(
                    f"{user} calls the CMSIS-NN function {missing[0]}, which no source in {self.root / 'Source'} "
                    "defines: the TFLM tree is incomplete (generate it again with create_tflm_tree.py)"
                )
            queue.extend(words & known)

        for user, text in users.items():
            text = _clean(text)
            reach(user, set(_WORD.findall(text)), set(_CALL.findall(text)))
        while queue:
            name = queue.pop()
            if name in seen:
                continue
            seen.add(name)
            queue.extend(inline.get(name, set()) & known)
            if name in defined and defined[name] not in files:
                files.add(defined[name])
                reach(defined[name], *mentions[defined[name]])
        return [source for source in self.sources if source in files]


def _external_name(head: str, body: str | None) -> str | None:
    """The name a file-scope declaration defines for other files: a function with a body, or data (initialized
    or not) that is neither static nor extern; None for a prototype, a type or a static."""
    if _QUALIFIERS.search(head) or (body is not None and _TYPE_BLOCK.search(head) and "=" not in head):
        return None
    function = _FUNCTION_HEAD.search(head)
    if function is not None:
        return function.group(1) if body is not None else None
    if body is not None and "=" not in head:
        return None
    data = _DATA_NAME.search(head)
    return data.group(1) if data else None
