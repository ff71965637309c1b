"""The support-agent demo: scripted conversations (script.py), the scripted agent that replays them
through the public API (agent.py), and the seeding and comparison runs (runner.py)."""
