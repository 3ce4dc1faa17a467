#!/usr/bin/env bash
# The browser tests/test_report_browser.py opens the report in: Debian's headless Chromium, driven by
# Playwright from PyPI. Playwright's own browser download cannot be fetched on these machines, so the test
# launches the system browser (executable_path) and nothing here runs `playwright install`.
# Called by .ci/run before the tests; safe to run twice (it installs only what is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
# the version pyproject.toml's `dev` extra pins (`pip install -e .[dev]` has usually installed it already)
PLAYWRIGHT_VERSION=$(python3 -c "import re, tomllib; print(next(re.sub(r'^playwright==', '', d) for d in tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['dev'] if d.startswith('playwright==')))")
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >/dev/null
fi
if ! python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('playwright') != '$PLAYWRIGHT_VERSION')" 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check "playwright==$PLAYWRIGHT_VERSION"
fi
command -v chromium
