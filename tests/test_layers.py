"""What import-linter cannot see: a model looked up by its label in Django's app registry. Only the two
registries of a tenant's data may do so, in privacy, which sits above every app whose tables they
reach (docs/architecture.md, "One deliberate seam"); anywhere else a label would reach a sibling's or
a higher layer's table around the layers and independence contracts."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "core",
    "tenants",
    "api",
    "episodic",
    "semantic",
    "procedural",
    "router",
    "consolidation",
    "privacy",
    "dashboard",
)
# Reach every tenant table by label: erasure (every place holding a subject's data) and export.
REGISTRIES = {"privacy/erasure.py", "privacy/export.py"}


def _registry_lookups(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"get_model", "get_models"}
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "apps"
        ):
            return True
    return False


def modules_looking_up_models_by_label() -> set[str]:
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" not in relative and _registry_lookups(path.read_text()):
                found.add(relative)
    return found


def test_only_the_registries_look_up_models_by_label() -> None:
    assert modules_looking_up_models_by_label() == REGISTRIES
