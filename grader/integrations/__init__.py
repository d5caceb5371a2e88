"""Where other evaluation and training frameworks meet the grader (docs/integrations.md).

This room stands above the reward room and below the CLI. Its modules import their framework
at the top, so nothing below this room (and nothing the CLI runs) imports them: a framework is
loaded only when it loads the module itself, through its own plugin mechanism.
"""
