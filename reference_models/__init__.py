"""Trusted code shared across packs: real layer and accelerator shapes, the core analytical engine
of the pack format, and the merging of a pack's registries.

Each pack carries its own references and input generators in its trusted folder
(``problems/<pack>/_trusted/``); they may import these modules. Pure, typed, deterministic
functions (standard library and numpy only). This package never imports the grader or the sandbox.
"""
