"""The word lists the extractors read, kept as data beside them (consolidation/extractors/data/; the
format is core.lexicon's). Each file is read once per process."""

from __future__ import annotations

from pathlib import Path

from core import lexicon

DATA = Path(__file__).resolve().parent / "data"


def sections(name: str) -> dict[str, tuple[str, ...]]:
    """The entries of data file `name`, by section."""
    return lexicon.sections(DATA / name)


def words(name: str) -> frozenset[str]:
    """Every entry of data file `name`, whatever its section."""
    return lexicon.words(DATA / name)


def alternation(name: str) -> str:
    """The entries of data file `name` as a regular-expression alternation, longest first."""
    return lexicon.alternation(words(name))
