"""A pinned file: one file harness obtains by name and sha256 (a model, a keyword frontend), and where it is
declared, for messages. A model card's file and its frontend file are both one; harness/model/fetch.py obtains it."""

from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError
from harness.model.card import ModelCard


@dataclass(frozen=True)
class PinnedFile:
    name: str  # what messages call it: the card's name, or "<card> frontend"
    file_name: str  # its name in the cache and in a mirror
    sha256: str | None  # None only for a local path the card does not pin (used as it is, never cached)
    source: dict  # kind = "path" (path), "url" (url) or "pypi_wheel_member" (package, version, member, ...)
    mirror_path: str | None  # where a mirror holds it, relative to the mirror's root
    declared_in: Path  # the model card

    @property
    def kind(self) -> str | None:
        return self.source.get("kind")


def model_file(card: ModelCard) -> PinnedFile:
    """The card's model file."""
    return PinnedFile(card.name, card.file_name, card.sha256, card.source, card.mirror_path, card.card_path)


def frontend_file(card: ModelCard) -> PinnedFile:
    """The model file of a keyword card's [frontend] table (kind = "file")."""
    front = card.preprocessing.frontend or {}
    if front.get("kind", "file") != "file" or "name" not in front or not ("url" in front or "path" in front):
        raise UserError(
            f'model card {card.card_path}: [frontend] is either kind = "microfrontend" with its settings, '
            "or a model file with name, sha256 and url (or path)"
        )
    source = {"kind": "url", "url": front["url"]} if "url" in front else {"kind": "path", "path": front["path"]}
    return PinnedFile(
        f"{card.name} frontend", front["name"], front.get("sha256"), source, front.get("mirror_path"), card.card_path
    )
