"""The perf-core pack's trusted code: its reference functions, input generators and domain samplers.

Each module defines ``REFERENCES`` and ``GENERATORS`` with keys that start with the module's
name; this package merges them (problem.toml names its reference and generator by these keys).
Host only: nothing here ever reaches a candidate.
"""

from reference_models.registry import merge

from . import (
    attention,
    cycles,
    energy,
    loopnest,
    maestro,
    pipeline,
    ranking,
    roofline,
    samplers,
    samplers_f1_f7,
    samplers_f8_f17,
    systolic,
    tiles,
    workload,
)

_MODULES = (workload, roofline, tiles, loopnest, cycles, energy, systolic, maestro, ranking, pipeline, attention)

REFERENCES = merge(_MODULES, "REFERENCES")
GENERATORS = merge(_MODULES, "GENERATORS")
SAMPLERS = merge((samplers, samplers_f1_f7, samplers_f8_f17), "SAMPLERS")  # domain samplers, written apart from the generators
