"""harness stage: the real agent harness (Pi) and its contract.

- ``harnessfit.harness.pi`` — install the npm CLI into harnessfit's folder, configure and run it unattended;
- ``harnessfit.harness.card`` — ``HarnessCard`` (prompt template, tools, serialisation, result/error texts,
  ``validate_call``) and ``load_card``;
- ``harnessfit.harness.capture`` — build a card by driving the installed CLI against the scripted endpoint.
"""
