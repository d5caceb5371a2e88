"""The eval pipeline: where completions come from (a model service, a file, the demo model) and how they flow to grading and into the journal.

Stands on results, grading and packs.
"""
