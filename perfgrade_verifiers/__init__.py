"""The perfgrade environment for ``verifiers``, found by its taskset id.

verifiers imports a taskset's package by its id (``vf-eval perfgrade-verifiers ...`` imports
``perfgrade_verifiers``) and takes the Taskset, Harness and Env subclasses it exports through
``__all__``. The code lives in :mod:`grader.integrations.verifiers_env` (docs/integrations.md).
"""

from grader.integrations.verifiers_env import PerfgradeEnv, PerfgradeHarness, PerfgradeTaskset

__all__ = ["PerfgradeTaskset", "PerfgradeHarness", "PerfgradeEnv"]
