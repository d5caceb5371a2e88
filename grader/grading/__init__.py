"""Grading: extracting code from a completion, running it in the sandbox, scoring raw answers against expected values, and the pack validator.

Stands on packs.
"""
