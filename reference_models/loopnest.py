"""Reference models: loopnest (see the pack README for the families it covers)."""

from __future__ import annotations

REFERENCES: dict = {}
GENERATORS: dict = {}
