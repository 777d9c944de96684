#!/usr/bin/env bash
# Runs the sandbox's test suite as an unprivileged user, so the user-namespace route (how ARIA
# isolates programs on a laptop, where it is not root) is tested too. Only when running as root
# (CI, containers): it creates the user `aria-sandbox-test` if missing. Elsewhere `make test`
# already runs the suite as the (unprivileged) developer.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "sandbox-unprivileged: not root, the suite already ran as an unprivileged user"
  exit 0
fi
user=aria-sandbox-test
id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
bin=$(cargo test -p aria-sandbox --no-run --message-format json 2>/dev/null \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "all" and m.get("executable"):
        print(m["executable"])')
[ -n "$bin" ] || { echo "sandbox-unprivileged: the aria-sandbox test binary was not built" >&2; exit 1; }
work=$(mktemp -d)
cp "$bin" "$work/sandbox-tests"
chmod 755 "$work/sandbox-tests"
chown "$user" "$work"
echo "running the sandbox suite as $user (user namespaces)"
status=0
setpriv --reuid="$user" --regid="$user" --clear-groups env -i PATH=/usr/local/bin:/usr/bin:/bin \
  HOME="$work" TMPDIR="$work" "$work/sandbox-tests" --test-threads 2 || status=$?
rm -rf "$work"
exit $status
