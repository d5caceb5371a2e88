"""The adequacy test pack's trusted code: a reference and generator (tiles_testing) and, written
apart, a domain sampler (tiles_domain)."""

from __future__ import annotations

from . import tiles_domain, tiles_testing

REFERENCES = dict(tiles_testing.REFERENCES)
GENERATORS = dict(tiles_testing.GENERATORS)
SAMPLERS = {**tiles_domain.SAMPLERS, **tiles_testing.SAMPLERS}
