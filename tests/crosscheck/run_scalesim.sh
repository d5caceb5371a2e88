#!/usr/bin/env bash
# Cross-check reference_models/systolic.py against the real SCALE-Sim 3.0.0.
#
# SCALE-Sim needs numpy<2 and pandas<3, so it gets its own virtual environment, outside the
# project's: $PERFGRADE_SCALESIM_VENV (default /tmp/perfgrade-scalesim-venv). It is created on
# the first run and reused afterwards. Arguments are passed to scalesim_crosscheck.py
# (--cases N, --conv-cases N, --seed S).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${PERFGRADE_SCALESIM_VENV:-/tmp/perfgrade-scalesim-venv}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import scalesim" 2>/dev/null; then
    echo "creating $venv (scalesim==3.0.0, numpy<2, pandas<3)" >&2
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet "scalesim==3.0.0" "numpy<2" "pandas<3"
fi

exec "$venv/bin/python" "$here/scalesim_crosscheck.py" "$@"
