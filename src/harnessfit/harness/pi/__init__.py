"""Pi, the one harness implementation: the real Pi CLI (``@mariozechner/pi-coding-agent`` up to 0.73.x,
``@earendil-works/pi-coding-agent`` from 0.74.0), registered as ``pi`` (``harness.base.get_harness``).

- ``cli`` — install any Pi version from npm into harnessfit's folder, configure it for an endpoint, run it
  unattended (its names are re-exported here: ``from harnessfit.harness.pi import install_pi``);
- ``capture`` — build a card by driving the installed CLI against the scripted endpoint;
- ``arguments`` — Pi's argument parsing, repair and coercion (what ``HarnessCard.validate_call`` emulates);
- ``results`` / ``texts`` — the renderer of Pi's tool-result texts and the catalogue of every Pi-authored text;
- ``recorded`` — which Pi recorded a session, and whether its calls mean the same under another card;
- ``harness`` — ``PiHarness``, the ``Harness`` the eval runner, scorer, report and serve reach Pi through.

Only ``cli`` is imported here (light: no jsonschema), so the source formats' renderers stay cheap to import.
"""

from harnessfit.harness.pi.cli import *  # noqa: F403
from harnessfit.harness.pi.cli import __all__  # noqa: F401
