"""A registry's names as argparse choices, read from the registry only when a command line names one or help
lists them: the parser stays light (tests/unit/architecture/test_cli_startup.py) and the registry stays the one
list. Give the option a metavar, so that building the parser does not read the names."""

import importlib
from collections.abc import Iterator, Sequence
from functools import cached_property


class RegistryNames(Sequence[str]):
    def __init__(self, names: str) -> None:
        self._names = names  # "module:function", the function returning the names

    @cached_property
    def _loaded(self) -> tuple[str, ...]:
        module, function = self._names.split(":")
        return tuple(getattr(importlib.import_module(module), function)())

    def __getitem__(self, index):
        return self._loaded[index]

    def __len__(self) -> int:
        return len(self._loaded)

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded)

    def __contains__(self, name: object) -> bool:
        return name in self._loaded
