"""The swe_agent format: ``reader.py`` (its files → trajectories) and ``mapping.py`` (its tool calls → Pi's)."""
