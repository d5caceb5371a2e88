"""Where other evaluation and training frameworks meet the grader (docs/integrations.md).

* :mod:`grader.integrations.inspect_tasks`: the packs as inspect_ai tasks (``inspect eval
  perfgrade/perf_core``), scored by the grader;
* :mod:`grader.integrations.verifiers_env`: the packs as a ``verifiers`` environment (its
  taskset, a one-call chat harness and the grader as the reward); verifiers finds it by the
  taskset id ``perfgrade-verifiers`` (the ``perfgrade_verifiers`` package re-exports it).

This room stands above ``reward`` and below ``cli``. A bridge imports its framework at its top;
nothing else in the grader imports a bridge, so the core never depends on a framework: a
framework loads the module itself, through its own plugin mechanism.
"""
