#!/usr/bin/env bash
# The end-to-end suites against a real `aria serve` (tests/e2e): the web UI in headless Chromium
# (Playwright, with Debian's /usr/bin/chromium; Playwright's own browser download is never
# used), the official `openai` Python client, and schemathesis against the OpenAPI document.
# Python packages go into a virtual environment under target/ (tests/e2e/requirements.txt).
# Everything the suites reach is on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/tmp/e2e-venv
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s tests/e2e/requirements.txt "$stamp"; then
  echo "e2e: installing the suites' Python packages into $venv (once)"
  python3 -m venv "$venv" || {
    echo "error: python3 -m venv failed; install it (Debian/Ubuntu: apt-get install -y python3-venv) and run make test again" >&2
    exit 1
  }
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt
  cp tests/e2e/requirements.txt "$stamp"
fi
cargo build --quiet -p aria-cli
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "e2e: NOTE: no Chromium at ${CHROMIUM:-/usr/bin/chromium}, so the browser suite is skipped (apt-get install -y chromium runs it; CI does)" >&2
fi
exec "$venv/bin/python" -m pytest tests/e2e -q -rs "$@"
