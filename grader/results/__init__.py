"""Results: run directories (manifest and journal), statistics, failure signatures and the terminal and HTML renderings. Read-only over a run; stands on grading and packs."""
