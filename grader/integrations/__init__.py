"""Bridges to other frameworks, each in its own module (docs/integrations.md).

* :mod:`grader.integrations.verifiers_env`: the packs as a ``verifiers`` environment (its
  taskset, a one-call chat harness and the grader as the reward); verifiers finds it by the
  taskset id ``perfgrade-verifiers`` (the ``perfgrade_verifiers`` package re-exports it).

A bridge imports its framework at its top; nothing else in the grader imports a bridge, so the
core never depends on a framework (``pip install -e ".[verifiers]"`` brings verifiers). This room
stands above ``reward`` and below ``cli``.
"""
