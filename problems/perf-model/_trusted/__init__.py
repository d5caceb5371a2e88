"""The perf-model pack's trusted code: its reference functions, input generators and domain samplers.

Each module defines ``REFERENCES`` and ``GENERATORS`` with keys that start with the module's
name; this package merges them (problem.toml names its reference and generator by these keys).
They build on the engine shared across packs (``reference_models.pm_core``, ``pm_shapes``) and
on this pack's drawing helpers (``pm_draw``). Host only: nothing here ever reaches a candidate.
"""

from reference_models.registry import merge

from . import (pm_e2e, pm_flash, pm_fused, pm_pipeline, pm_search, pm_select, pm_systolic, pm_traffic, samplers,
               samplers_e2e, samplers_flash, samplers_fused, samplers_mapping, samplers_search, samplers_system,
               samplers_systolic, samplers_timeline)

_MODULES = (pm_traffic, pm_select, pm_e2e, pm_flash, pm_search, pm_fused, pm_systolic, pm_pipeline)

REFERENCES = merge(_MODULES, "REFERENCES")
GENERATORS = merge(_MODULES, "GENERATORS")
# domain samplers, written apart from the generators
SAMPLERS = merge((samplers, samplers_mapping, samplers_system, samplers_search, samplers_timeline, samplers_flash,
                  samplers_fused, samplers_systolic, samplers_e2e), "SAMPLERS")
