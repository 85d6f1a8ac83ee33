#!/usr/bin/env bash
# Install placement-quota and start the enforcement service on its embedded
# default (no cloud needed: noauth on 127.0.0.1:8790). Arguments go to
# `placement-quota serve`, e.g. --port 9000 or --config-file my.conf.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install.sh
args=()
for arg in "$@"; do
    case "$arg" in
        --config-file|--config-file=*|--config-dir|--config-dir=*)
            echo "serve.sh: put $arg before the command: .venv/bin/placement-quota $arg ... serve" >&2
            exit 2 ;;
    esac
    args+=("$arg")
done
exec "${PQ_VENV:-.venv}/bin/placement-quota" serve "${args[@]}"
