"""harness stage: the real agent harness and its contract.

- ``harnessfit.harness.base`` — the ``Harness`` interface (install, capture the card, render a request, run an eval
  episode, read its session files, its harness-authored texts) and the registry (``get_harness(spec)``) every other
  stage reaches a harness through;
- ``harnessfit.harness.pi`` — Pi, the one implementation: install any Pi version from npm into harnessfit's folder,
  run it unattended, capture its card, emulate its argument checks, its result texts and session reading;
- ``harnessfit.harness.versions`` — harness specs (``pi@VERSION[+PROFILE]``), the committed card versions, the
  default target, and the rule every stage applies to the harness an artifact records;
- ``harnessfit.harness.card`` — ``HarnessCard`` (prompt template, tools, serialisation, result/error texts, CLI
  switches, session layout; ``validate_call`` asks the card's harness) and ``load_card``;
- ``harnessfit.harness.diff`` — ``card_diff``: what differs between two cards, per section, tool and result text.
"""
