"""The embedding cache (a text already embedded is not sent to the model again) and background embedding."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence

import numpy as np
import pytest

from core import embedding
from core.embedding import EmbeddingCache, HashingEmbedder


class CountingEmbedder(HashingEmbedder):
    name = "counting-test"

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().embed(texts)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> CountingEmbedder:
    counting = CountingEmbedder()
    monkeypatch.setattr(embedding, "get_embedder", lambda: counting)
    return counting


def test_a_text_is_embedded_once_and_served_from_the_cache(model: CountingEmbedder) -> None:
    cache = EmbeddingCache()
    first = cache.embed(["where is my dog", "printer jam"])
    again = cache.embed(["printer jam", "new text", "where is my dog", "new text"])
    assert model.calls == [["where is my dog", "printer jam"], ["new text"]]
    assert again[0] == first[1] and again[2] == first[0] and again[1] == again[3]
    assert all(isinstance(x, float) for x in again[1])
    assert np.allclose(again[1], HashingEmbedder().embed(["new text"])[0])


def test_the_least_recently_used_text_is_dropped_first(model: CountingEmbedder) -> None:
    probe = EmbeddingCache()
    probe.embed(["a"])
    cache = EmbeddingCache(max_bytes=2 * probe.nbytes + 10)  # room for two one-letter texts
    cache.embed(["a"])
    cache.embed(["b"])
    cache.embed(["a"])  # "a" is now the most recent
    cache.embed(["c"])  # evicts "b"
    model.calls.clear()
    cache.embed(["a", "c"])
    assert model.calls == []
    cache.embed(["b"])
    assert model.calls == [["b"]]


def test_a_returned_vector_can_be_changed_without_touching_the_cache(model: CountingEmbedder) -> None:
    cache = EmbeddingCache()
    vector = cache.embed(["text"])[0]
    vector[0] = 99.0
    assert cache.embed(["text"])[0][0] != 99.0


def test_a_background_embedding_is_the_same_vector(model: CountingEmbedder) -> None:
    embedding.embedding_cache.clear()
    future = embedding.embed_in_background("where did I park")
    assert future.result(timeout=10) == embedding.embed_one("where did I park")
    assert model.calls == [["where did I park"]]


def test_a_forked_worker_starts_its_own_embedding_threads(model: CountingEmbedder) -> None:
    embedding.embed_in_background("before the fork").result(timeout=10)
    assert embedding._background is not None
    pid = os.fork()
    if pid == 0:  # the child: the parent's executor has no threads here, so it must be forgotten
        os._exit(0 if embedding._background is None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert embedding._background is not None


def test_a_waiting_future_waits_once_and_hands_its_error_to_every_caller() -> None:
    calls: list[int] = []

    def wait() -> int:
        calls.append(1)
        return 7

    future = embedding.WaitingFuture(wait)
    assert not future.done()
    assert future.result() == 7 and future.result() == 7 and future.done() and calls == [1]

    def fails() -> int:
        raise LookupError("from the graph")

    broken = embedding.WaitingFuture(fails)
    for _ in range(2):
        with pytest.raises(LookupError, match="from the graph"):
            broken.result()


@pytest.fixture(scope="module")
def minilm() -> embedding.MiniLMEmbedder:
    return embedding.MiniLMEmbedder()


# A word, a question, a text the model truncates at its 256 tokens, and other scripts.
TEXTS = ["a", "where did I park the car?", "the printer jams on tray two " * 60, "日本語のテキスト 😀 ünïcode"]


def test_one_text_gets_the_vector_a_batch_gives_it_from_the_real_model(minilm) -> None:
    assert minilm._query_graph(minilm._load()) is not None, "the query graph was not traced"
    for text in TEXTS:
        alone = minilm.embed([text])
        in_batch = minilm.embed([text, "another text of another length"])[0]
        assert alone.shape == (1, embedding.EMBEDDING_DIM) and alone.dtype == np.float32
        assert np.abs(alone[0] - in_batch).max() < 1e-5
        assert abs(float(np.linalg.norm(alone[0])) - 1.0) < 1e-5


def test_an_embedding_in_the_background_runs_while_the_caller_holds_the_interpreter(minilm, monkeypatch) -> None:
    monkeypatch.setattr(embedding, "get_embedder", lambda: minilm)
    embedding.embedding_cache.clear()
    minilm.embed(["warm up"])
    future = embedding.embed_in_background(TEXTS[1])
    assert isinstance(future, embedding.WaitingFuture), "the query was not forked onto torch's threads"
    # Pure Python for 0.3 s: the model run op by op needs the interpreter between its operations and
    # took about a second beside such a loop; the forked graph is done by the end of it.
    deadline = time.perf_counter() + 0.3
    spins = 0
    while time.perf_counter() < deadline:
        spins += sum(i * i for i in range(200))
    started = time.perf_counter()
    future.result()
    assert time.perf_counter() - started < 0.05
    assert np.abs(np.asarray(future.result()) - minilm.embed([TEXTS[1]])[0]).max() < 1e-6
    assert embedding.embedding_cache.get(TEXTS[1]) is not None  # the next ask is a cache hit
    embedding.embedding_cache.clear()


def test_without_a_traced_graph_the_background_embedding_uses_a_thread(minilm, monkeypatch) -> None:
    eager = embedding.MiniLMEmbedder()
    eager._model = minilm._load()
    monkeypatch.setattr(eager, "_trace", lambda model: False)
    monkeypatch.setattr(embedding, "get_embedder", lambda: eager)
    embedding.embedding_cache.clear()
    assert eager.embed_async(TEXTS[1]) is None
    vector = embedding.embed_in_background(TEXTS[1]).result(timeout=30)
    assert np.abs(np.asarray(vector) - minilm.embed([TEXTS[1]])[0]).max() < 1e-5
    embedding.embedding_cache.clear()


def test_a_process_forked_after_tracing_embeds_with_the_eager_model(minilm) -> None:
    import torch

    vector = minilm.embed([TEXTS[1]])
    assert minilm._query_graph(minilm._load()) is not None
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # torch's own pool of two threads does not survive a fork either
    try:
        pid = os.fork()
        if pid == 0:
            signal.alarm(30)
            ok = minilm._query_graph(minilm._load()) is None and minilm.embed_async("x") is None
            ok = ok and float(np.abs(minilm.embed([TEXTS[1]]) - vector).max()) < 1e-5
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        torch.set_num_threads(threads)
    assert os.waitstatus_to_exitcode(status) == 0
