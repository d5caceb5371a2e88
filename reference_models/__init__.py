"""Trusted reference implementations of the benchmark's performance models.

Pure, typed, deterministic functions (standard library and numpy only) and the input generators
that draw test cases for them. Problems name both by key; the keys live in two explicit
registries, :data:`REFERENCES` and :data:`GENERATORS` (see :mod:`reference_models.registry`).

This package never imports the grader or the sandbox.
"""

from .registry import GENERATORS, REFERENCES

__all__ = ["GENERATORS", "REFERENCES"]
