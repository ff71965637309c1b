"""The extraction tests' cases are phrasings of their own (issue 42): no sentence a test of
tests/consolidation feeds the extractor is a sentence or a template of a development set under
evaluation/ with its placeholders filled in. A rule that passes such a test has only learnt to read
the generator back."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A template says something of its own when its fixed words are at least this many ("I live in {v}.");
# "My {who} is {v}." fixes only a frame every sentence of that shape would share.
MIN_FIXED_WORDS = 3
_PLACEHOLDER = re.compile(r"\{[a-z_]*\}")
_SENTENCE_END = re.compile(r"[.!?]\s*$")
_WORD = re.compile(r"[A-Za-z][\w'-]*")


def _strings(path: Path) -> list[str]:
    return [
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def _templates() -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for path in sorted((ROOT / "evaluation").glob("*.py")):
        for text in _strings(path):
            fixed = _WORD.findall(_PLACEHOLDER.sub(" ", text))
            if len(fixed) < MIN_FIXED_WORDS or not _SENTENCE_END.search(text):
                continue
            pattern = ".{1,80}?".join(re.escape(part) for part in _PLACEHOLDER.split(text.strip()))
            out.append((text, re.compile(pattern, re.IGNORECASE)))
    return out


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def test_no_case_of_the_extraction_tests_is_a_development_template() -> None:
    templates = _templates()
    assert templates, "the development sets' templates were not found"
    copied = []
    for path in sorted((ROOT / "tests" / "consolidation").glob("test_*.py")):
        for text in _strings(path):
            for sentence in _sentences(text):
                if len(sentence.split()) < MIN_FIXED_WORDS:
                    continue
                match = next((t for t, rx in templates if rx.fullmatch(sentence)), None)
                if match is not None:
                    copied.append(f"{path.name}: {sentence!r} is {match!r}")
    assert not copied, "\n".join(copied)


def test_the_check_finds_a_filled_in_template() -> None:
    templates = _templates()
    filled = next(t for t, _ in templates if "{v}" in t)
    sentence = filled.replace("{v}", "Zanzibar").replace("{old}", "Quito").replace("{who}", "cousin")
    assert any(rx.fullmatch(sentence) for _, rx in templates)
