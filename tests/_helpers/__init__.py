"""Helpers shared by the tests, imported as a package (``from _helpers.conversations import make_conv``): the
``tests`` folder is on ``sys.path`` through ``pythonpath`` in ``pyproject.toml``, so this works the same with
pytest-xdist and with any ``--import-mode``.

- ``conversations``: small Pi-wire conversations (``make_conv``, ``corpus``) for the dataset tests;
- ``sft``: small SFT record sets in the audit's input shape, for the tokens tests;
- ``tinyset``: a tiny random Llama and a tokenized set in the audit's output shape, for the train tests.
"""
