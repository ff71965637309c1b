"""What a Prometheus scrape reads: this process's registry, or in multiprocess mode (PROMETHEUS_MULTIPROC_DIR)
the files every process writes there, added up."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector


class StartedFilesCollector(MultiProcessCollector):
    """Adds up the files of processes that have sized theirs. A process creates its file before it sizes it
    (prometheus_client issue 1199): a scrape in between reads 0 bytes and fails whole, and a process killed
    then leaves the file so for good. A file of 0 bytes has recorded nothing."""

    def collect(self) -> Iterable[Metric]:
        files = []
        for path in glob.glob(os.path.join(self._path, "*.db")):
            try:
                if os.path.getsize(path) > 0:
                    files.append(path)
            except OSError:  # marked dead and removed since the glob
                continue
        return self.merge(files, accumulate=True)


def scrape_registry() -> CollectorRegistry:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    StartedFilesCollector(registry)
    return registry
