"""The codex format: ``reader.py`` (its files → trajectories) and ``mapping.py`` (its tool calls → Pi's)."""
