"""The scripted OpenAI-compatible model endpoint, under its serving name: the classes live in
``harnessfit.harness.scripted`` (capturing the harness card drives Pi with them, and ``harness`` sits below
``serve``)."""

from harnessfit.harness.scripted import Reply, ScriptedEndpoint

__all__ = ["Reply", "ScriptedEndpoint"]
