"""Packs: problem files, their vectors (inputs from generators, expected values from references) and the prompt a model sees.

Stands on the base only.
"""
