"""The parts of the context's packing that may be switched off, and the one place that says which run.

Packing at its simplest takes the candidates greedily by value per token, whole lines only. On top of
that the router adds parts, each of which must earn its place on answers (docs/router.md, "What each
part of the packer contributes"; docs/benchmarks/packer_ablation.md). Each can be switched off for an
ablation with ENGRAM_PACKER_OFF, a comma-separated list of their names; the default runs them all.

- `fact_cover`: a fact and each of its source lines cover each other, so that one of them is served,
  never both (router.candidates.semantic.settle_facts);
- `fact_bound`: a fact is worth no more than the best line of history citing its turn, or, where history
  found none, than the least valuable line it offers (router.candidates.semantic.fact_worth);
- `fact_defer`: a fact is worth no more per token than its line where the line answers the query better
  (by value, and holding query words the fact lacks) (router.candidates.semantic.fact_defer);
- `fact_earlier`: a fact restating only lines labelled "(earlier)" requires what they require
  (router.candidates.semantic.fact_earlier);
- `swap`: after the ranking, in the room left, an item replaces the one it covers that was taken first,
  when it is worth more (router.packing);
- `neighbours`: the turns before and after the best hits are offered (router.candidates.episodic);
- `summaries`: the summaries of the sessions hit are offered, as fillers;
- `earlier`: of two lines that answer the query and say the same thing, the older is labelled
  "(earlier)" and served only with the newer;
- `latest`: without a session, the subject's latest events fill what relevant history leaves;
- `day_headers`: history is grouped under a dated header per day (`### 8 May 2023`), whose tokens
  the packing pays; off, the lines are listed without it;
- `layer_caps`: each ranked layer's budget caps what that layer may take; off, procedures, facts and
  history share the memory budget in one ranking with no cap but the whole.

What is not a part: the exact count (every layer and the whole prompt are counted with the tokeniser,
and the least valuable items dropped until the counts fit), which keeps a context within its budget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


@dataclasses.dataclass(frozen=True)
class PackerParts:
    fact_cover: bool = True
    fact_bound: bool = True
    fact_defer: bool = True
    fact_earlier: bool = True
    swap: bool = True
    neighbours: bool = True
    summaries: bool = True
    earlier: bool = True
    latest: bool = True
    day_headers: bool = True
    layer_caps: bool = True

    @classmethod
    def without(cls, off: Iterable[str]) -> PackerParts:
        """All parts but those named; an unknown name is a configuration error, not a silent no-op."""
        names = {name.strip() for name in off if name.strip()}
        unknown = names - set(PART_NAMES)
        if unknown:
            raise ImproperlyConfigured(
                f"ENGRAM_PACKER_OFF names no part {', '.join(sorted(unknown))}; the parts: {', '.join(PART_NAMES)}."
            )
        return cls(**dict.fromkeys(names, False))

    def off(self) -> tuple[str, ...]:
        return tuple(name for name in PART_NAMES if not getattr(self, name))


PART_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(PackerParts))
# Every part on: the default.
ALL_PARTS = PackerParts()


def packer_parts() -> PackerParts:
    """The parts that run, from settings.ENGRAM["PACKER_OFF"]."""
    return PackerParts.without(settings.ENGRAM.get("PACKER_OFF", ()))
