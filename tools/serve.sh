#!/usr/bin/env bash
# Install placement-quota and start the enforcement service on its embedded
# default (no cloud needed: noauth on 127.0.0.1:8790).
#
# Arguments go to `placement-quota serve`, e.g. --port 9000; the options of
# the placement-quota command itself (--config-file, --config-dir,
# --log-file, --debug, --strict-config, -v, -q) are put before `serve`,
# where the command reads them:
#   tools/serve.sh --config-file my.conf --port 9000
# runs `placement-quota --config-file my.conf serve --port 9000`.
#
# tools/install.sh runs only when the venv ($PQ_VENV, default .venv) has no
# placement-quota or the packaging changed since it last installed: it
# writes the sha256 of setup.cfg, setup.py and requirements.txt
# (concatenated) into $PQ_VENV/.placement-quota-packaging.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PQ_VENV:-.venv}
stamp="$venv/.placement-quota-packaging"
packaging=$(cat setup.cfg setup.py requirements.txt | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/placement-quota" ] \
        || [ "$(cat "$stamp" 2>/dev/null)" != "$packaging" ]; then
    tools/install.sh
fi
global=()
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --config-file|--config-dir|--log-file)
            if [ $# -lt 2 ]; then
                echo "serve.sh: $1 needs a value" >&2
                exit 2
            fi
            global+=("$1" "$2")
            shift ;;
        --config-file=*|--config-dir=*|--log-file=*|--debug|--strict-config)
            global+=("$1") ;;
        --verbose|--quiet|-q|-v|-vv|-vvv)
            global+=("$1") ;;
        *)
            args+=("$1") ;;
    esac
    shift
done
exec "$venv/bin/placement-quota" ${global[@]+"${global[@]}"} serve \
    ${args[@]+"${args[@]}"}
