"""Code with no models and no knowledge of the memory layers: embedding, tokens, timestamps, Redis,
database helpers, domain errors, health checks. It imports nothing of ours, so every app may use it."""
