"""Run a pack's own module (a variant, a partial model) on many inputs on the host, out of process.

The validator's adequacy check runs every declared variant and partial model on thousands of
inputs; the sandbox would cost a container per module and gains nothing for code the pack's
author wrote. It still never runs in the grader's process: each module runs in a fresh
``python -I`` process (host_child.py: no environment, no user site, no current directory on the
path), with a CPU budget per input, a memory cap and a timeout for the whole run. Inputs go in as
JSON on stdin; answers come back as JSON lines, parsed strictly (sandbox.channel.parse_strict).

Behaviour of the module is data (an exception or a timeout on one input is that input's answer);
only a run that cannot finish at all raises :class:`HostRunError`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.channel import ChannelError, parse_strict

from ..errors import GraderError

CHILD = Path(__file__).with_name("host_child.py")


class HostRunError(GraderError):
    """A module could not be run to the end on the host (it would not load, or ran out of time)."""


@dataclass(frozen=True)
class Answer:
    """What the module returned for one input (``error`` set when it raised or timed out)."""

    value: Any = None
    error: str | None = None


def run_on_host(source: str, entry_point: str, inputs: list[list[Any]], *, case_cpu_s: float = 2.0,
                memory_mb: int = 2048, timeout_s: float | None = None) -> list[Answer]:
    """The module's answer to each input (a list of arguments in signature order), in order."""
    job = json.dumps({"source": source, "entry_point": entry_point, "inputs": inputs,
                      "case_cpu_s": case_cpu_s, "memory_mb": memory_mb}, allow_nan=False)
    if timeout_s is None:
        timeout_s = 60.0 + 3 * case_cpu_s * len(inputs)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "LANG": "C.UTF-8"}
    try:
        proc = subprocess.run([sys.executable, "-I", str(CHILD)], input=job.encode(), capture_output=True,
                              timeout=timeout_s, env=env, cwd="/")
    except subprocess.TimeoutExpired:
        raise HostRunError(f"did not finish {len(inputs)} inputs in {timeout_s:.0f} s") from None
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    if not lines:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise HostRunError(f"no answers ({tail[0][:300]})")
    try:
        recs = [parse_strict(line) for line in lines]
    except ChannelError as exc:
        raise HostRunError(f"unreadable answer: {exc}") from None
    if isinstance(recs[0], dict) and "load_error" in recs[0]:
        raise HostRunError(f"the module does not load: {recs[0]['load_error']}")
    if not recs or recs[-1] != {"done": True} or len(recs) != len(inputs) + 1:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise HostRunError(f"stopped after {max(0, len(recs) - 1)} of {len(inputs)} inputs ({tail[0][:300]})")
    return [Answer(value=r.get("value")) if r.get("ok") else Answer(error=str(r.get("error"))) for r in recs[:-1]]
