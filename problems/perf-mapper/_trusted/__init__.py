"""The perf-mapper pack's trusted code: reference searches, evaluators and input generators.

Each module defines ``REFERENCES``, ``GENERATORS`` and ``EVALUATORS`` with keys that start with
the module's name; this package merges them. ``EVALUATORS`` are named by problem.toml's
``[scoring] evaluator``: they judge a returned mapping on the host (docs/mapper.md). Host only:
nothing here ever reaches a candidate.
"""

from reference_models.registry import merge

from . import mapper, mapper_capped, mapper_fusion, mapper_llm, mapper_pipe

_MODULES = (mapper, mapper_fusion, mapper_llm, mapper_capped, mapper_pipe)

REFERENCES = merge(_MODULES, "REFERENCES")
GENERATORS = merge(_MODULES, "GENERATORS")
EVALUATORS = merge(_MODULES, "EVALUATORS")
SPACES = merge(_MODULES, "SPACES")
