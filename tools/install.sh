#!/usr/bin/env bash
# Create the virtualenv (default .venv, or $PQ_VENV) and install
# placement-quota into it; with --test, the test requirements too
# (Keystone, Blazar, gabbi...: the real services the tests start).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PQ_VENV:-.venv}
python=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
reqs=(-r requirements.txt)
if [ "${1:-}" = "--test" ]; then
    reqs+=(-r test-requirements.txt)
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${reqs[@]}" -e .
# What was installed, for tools/serve.sh (which installs again only when
# this changes).
cat setup.cfg setup.py requirements.txt | sha256sum | cut -d' ' -f1 \
    >"$venv/.placement-quota-packaging"
