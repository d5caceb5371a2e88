"""Fixtures shared by the perf-mapper test modules."""

from __future__ import annotations

import pytest

from grader.packs.problems import Catalog


@pytest.fixture(scope="module")
def problems(request):
    """The perf-mapper problems a test module names in its ``IDS``, by id."""
    cat = Catalog()
    return {pid: cat.find(f"perf-mapper/{pid}") for pid in request.module.IDS}
