"""harness stage: the real agent harness (Pi) and its contract.

- ``harnessfit.harness.versions`` — the committed card versions, the default target, the npm scope rule;
- ``harnessfit.harness.pi`` — install any Pi version from npm into harnessfit's folder (a private Node.js where the
  version needs one), configure and run it unattended;
- ``harnessfit.harness.card`` — ``HarnessCard`` (prompt template, tools, serialisation, result/error texts, CLI
  switches, session layout, ``validate_call``) and ``load_card``;
- ``harnessfit.harness.capture`` — build a card by driving the installed CLI against the scripted endpoint;
- ``harnessfit.harness.diff`` — ``card_diff``: what differs between two cards, per section, tool and result text.
"""
