"""perfgrade: a benchmark and grader for LLM-written analytical performance models.

The grader is the only package that puts the pieces together: problem packs and their hidden
vectors, the model client, the sandbox, scoring, statistics, run directories and the CLI.
"""

__version__ = "0.1.0"
