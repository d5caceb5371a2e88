"""Opt-in: the SCALE-Sim cross-check, run from pytest.

Collected only when PERFGRADE_SCALESIM_PYTHON names a Python interpreter that has scalesim 3.0.0
installed (for example the one run_scalesim.sh creates, /tmp/perfgrade-scalesim-venv/bin/python;
see conftest.py beside this file). The default test run never needs SCALE-Sim.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

PYTHON = os.environ.get("PERFGRADE_SCALESIM_PYTHON", "")

pytestmark = [pytest.mark.slow]


def test_systolic_references_agree_with_scalesim():
    script = Path(__file__).with_name("scalesim_crosscheck.py")
    proc = subprocess.run([PYTHON, str(script), "--cases", "40", "--conv-cases", "10"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
