#!/usr/bin/env bash
# Install everything the tests need and run every test: unit tests and
# functional tests against real Placement, Keystone and Blazar code, then
# flake8 and the docs build (sphinx-build -W). Ends with the line
# "N passed, N failed, N skipped".
# Arguments are passed to `stestr run` (e.g. a test-name filter).
set -uo pipefail
cd "$(dirname "$0")/.."
venv=${PQ_VENV:-.venv}
tools/install.sh --test || { echo "0 passed, 1 failed (install)"; exit 1; }

# Debian packages the tests need: Graphviz's `dot` (tree show --output
# x.png). Installed only when missing and apt-get is there; otherwise those
# tests skip.
if ! command -v dot >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    echo "Installing the Debian package graphviz (for the PNG tests)..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q graphviz >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 \
             && apt-get install -y -q graphviz >/dev/null; } \
        || echo "Could not install graphviz: the PNG tests will skip."
fi

# PostgreSQL's server binaries (initdb, postgres) for the functional tests
# that need a real database: tests/fixtures/postgresql.py starts a private
# cluster of its own, so no system cluster is started here. Installed only
# when missing and apt-get is there; otherwise those tests skip.
if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
        && command -v apt-get >/dev/null 2>&1; then
    echo "Installing the Debian package postgresql (for the database tests)..."
    # Keep the package from creating (and starting) the system cluster.
    mkdir -p /etc/postgresql-common/createcluster.d 2>/dev/null \
        && echo 'create_main_cluster = false' 2>/dev/null \
            >/etc/postgresql-common/createcluster.d/placement-quota-tests.conf
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q postgresql >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 \
             && apt-get install -y -q postgresql >/dev/null; } \
        || echo "Could not install postgresql: the PostgreSQL tests will skip."
fi

# Install the Debian package $1 (for $2; $1 may name several, separated
# by spaces, and $3 may give apt-get options) without starting its system
# service: while it installs, a policy-rc.d that refuses every start (exit
# 101) is in place, unless the machine already had one (then it is left
# alone). The tests start private servers of their own.
install_without_starting() {
    echo "Installing the Debian package $1 (for $2)..."
    local policy_rc_d=/usr/sbin/policy-rc.d own_policy=
    if [ ! -e "$policy_rc_d" ] \
            && printf '#!/bin/sh\n# placement-quota tests: start no service\nexit 101\n' \
                >"$policy_rc_d" 2>/dev/null; then
        chmod 755 "$policy_rc_d" && own_policy=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086 # $3 and $1: words on purpose
    apt-get install -y -q ${3:-} $1 >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 \
             && apt-get install -y -q ${3:-} $1 >/dev/null; } \
        || echo "Could not install $1: the $2 will skip."
    [ -n "$own_policy" ] && rm -f "$policy_rc_d"
    return 0
}

# RabbitMQ (rabbitmq-server, rabbitmqctl, Erlang's epmd) for the functional
# tests of the lease lifecycle listener (tests/fixtures/rabbitmq.py starts
# a private node), and MariaDB's server (mariadbd, mariadb-install-db) for
# the ledger tests on MySQL/MariaDB (tests/fixtures/mariadb.py starts a
# private server on a unix socket), and for the tests of a Galera cluster
# behind HAProxy (tests/fixtures/galera.py and haproxy.py start private
# ones on 127.0.0.1) Galera's rsync state transfer (rsync; mariadb-server
# depends on it and on galera-4) and HAProxy. Installed only when missing
# and apt-get is there; otherwise those tests skip, saying why.
if command -v apt-get >/dev/null 2>&1; then
    [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] \
        || install_without_starting rabbitmq-server "lifecycle tests"
    [ -x /usr/sbin/mariadbd ] \
        || install_without_starting mariadb-server "MariaDB tests"
    command -v rsync >/dev/null 2>&1 \
        || install_without_starting rsync "Galera tests"
    [ -x /usr/sbin/haproxy ] \
        || install_without_starting haproxy "Galera tests behind HAProxy"
    # Chromium and its WebDriver for the dashboard's browser test
    # (tests/fixtures/browser.py), without the packages they only
    # recommend (a desktop's daemons) but with the fonts of its
    # screenshot.
    { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; } \
        || install_without_starting \
            "chromium chromium-driver fonts-liberation" \
            "dashboard browser test" --no-install-recommends
fi

# Python reads bytecode it finds but, under PYTHONDONTWRITEBYTECODE=1 (as
# some CI environments set it), writes none: every process the tests start
# (hundreds) would compile placement_quota's modules from source again,
# 0.4 s of CPU each for the command's imports. Compile them once here
# (__pycache__/ is git-ignored).
"$venv/bin/python" -m compileall -q -j 0 placement_quota tests tools \
    >/dev/null 2>&1 || echo "Could not compile placement_quota to bytecode."

# stevedore caches entry points per user; a fresh cache per run keeps a
# stale one (from an older checkout) out of the tests.
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
# A fresh clone has no .stestr/ and so no times of earlier runs: stestr
# would hand the groups of long tests (.stestr.conf) round-robin, and could
# give most of them to one worker. Seed it with the kept times
# (tools/test_times.py) so that the workers get even shares.
if [ ! -d .stestr ] && [ -f tools/test-times.json ]; then
    "$venv/bin/python" tools/test_times.py seed \
        | XDG_CACHE_HOME=$cache "$venv/bin/stestr" load --force-init \
            >/dev/null 2>&1 \
        || { rm -rf .stestr; echo "Could not seed .stestr/ with the kept test times: the tests are split round-robin."; }
fi
XDG_CACHE_HOME=$cache "$venv/bin/stestr" run --concurrency "${PQ_TEST_CONCURRENCY:-2}" "$@"
tests_rc=$?

"$venv/bin/flake8" placement_quota tests tools
lint_rc=$?
[ $lint_rc -eq 0 ] && echo "flake8: clean" || echo "flake8: style errors above"

# The documentation, as `tox -e docs` builds it: sphinx-build -W (every
# warning is an error). Sphinx comes from doc/requirements.txt, installed
# into the venv when missing; when it cannot be installed (no network), the
# build is skipped, saying so, and counts as nothing.
docs_rc=0
if ! "$venv/bin/python" -c 'import sphinx, os_api_ref' >/dev/null 2>&1; then
    echo "Installing doc/requirements.txt (for the docs build)..."
    "$venv/bin/pip" install -q --disable-pip-version-check \
        -r doc/requirements.txt >/dev/null 2>&1 \
        || "$venv/bin/pip" install -q --disable-pip-version-check sphinx \
            >/dev/null 2>&1 \
        || echo "Could not install sphinx: the docs build is skipped."
fi
if "$venv/bin/python" -c 'import sphinx' >/dev/null 2>&1; then
    docs_start=$SECONDS
    "$venv/bin/sphinx-build" -W -q -b html doc/source doc/build/html
    docs_rc=$?
    docs_time=$((SECONDS - docs_start))
    if [ $docs_rc -eq 0 ]; then
        echo "docs: built in ${docs_time}s (doc/build/html)"
    else
        echo "docs: build failed (errors above)"
    fi
fi
# The API reference, as `tox -e api-ref` builds it (os-api-ref, from
# doc/requirements.txt; skipped, saying so, when it could not be installed).
if "$venv/bin/python" -c 'import os_api_ref' >/dev/null 2>&1; then
    apiref_start=$SECONDS
    "$venv/bin/sphinx-build" -W -q -b html api-ref/source api-ref/build/html
    apiref_rc=$?
    if [ $apiref_rc -eq 0 ]; then
        echo "api-ref: built in $((SECONDS - apiref_start))s (api-ref/build/html)"
    else
        echo "api-ref: build failed (errors above)"
        docs_rc=$apiref_rc
    fi
else
    echo "api-ref: os-api-ref is not installed; the API reference build is skipped."
fi

summary=$("$venv/bin/stestr" last 2>/dev/null | sed -n 's/^ - \(Passed\|Failed\|Skipped\): \([0-9]*\)$/\1 \2/p')
passed=$(awk '$1=="Passed"{print $2}' <<<"$summary"); passed=${passed:-0}
failed=$(awk '$1=="Failed"{print $2}' <<<"$summary"); failed=${failed:-0}
skipped=$(awk '$1=="Skipped"{print $2}' <<<"$summary"); skipped=${skipped:-0}
if [ $tests_rc -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1   # stestr itself failed (import error, crash): count it
fi
[ $lint_rc -ne 0 ] && failed=$((failed + 1))
[ $docs_rc -ne 0 ] && failed=$((failed + 1))
echo "$passed passed, $failed failed, $skipped skipped"
[ $tests_rc -eq 0 ] && [ $lint_rc -eq 0 ] && [ $docs_rc -eq 0 ]
