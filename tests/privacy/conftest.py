"""Fixtures for privacy: erasure and export tests consolidate too, with consolidation's offline extractor."""

from tests.consolidation.conftest import _rule_extractor  # noqa: F401
