"""Offline evaluation of the memory: the sets (LoCoMo, its long-turn variant, the knowledge-update set),
the scorer and the baselines (recall.py), and `manage.py memory_eval`. It sits above every layer and may
import any of them; nothing imports it."""
