#!/usr/bin/env bash
# Dependency audit: pip-audit over the locked environment (uv.lock, every group and extra).
#
#   exit 0  no known vulnerability, or the vulnerability database could not be reached (offline
#           CI, sandbox): then it prints "audit skipped: vulnerability database unreachable"
#   exit 1  a known vulnerability, or the audit itself broke (bad lock file, unexpected error)
#
# It cannot hang: pip-audit's socket timeout (AUDIT_SOCKET_TIMEOUT, 15 s) and a wall-clock limit on
# the whole run (AUDIT_TIMEOUT, 60 s; reaching it counts as unreachable).
# Other knobs: AUDIT_SERVICE (pypi | osv), AUDIT_REQUIREMENTS (audit this pinned requirements file
# instead of exporting uv.lock), UV, PYTHON, PIP_AUDIT (the commands to run).
set -uo pipefail

cd "$(dirname "$0")/.."
UV=${UV:-uv}
PYTHON=${PYTHON:-python3}
AUDIT_TIMEOUT=${AUDIT_TIMEOUT:-60}
AUDIT_SOCKET_TIMEOUT=${AUDIT_SOCKET_TIMEOUT:-15}
AUDIT_SERVICE=${AUDIT_SERVICE:-pypi}
SKIPPED="audit skipped: vulnerability database unreachable"

PIP_AUDIT=${PIP_AUDIT:-$(command -v pip-audit || true)}
if [[ -z "$PIP_AUDIT" && -x .venv/bin/pip-audit ]]; then
    PIP_AUDIT=.venv/bin/pip-audit
fi
if [[ -z "$PIP_AUDIT" ]]; then
    echo "audit failed: pip-audit is not installed (it is in the dev group: uv sync)" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The locked environment as pinned requirements (the project and workspace members are ours).
req=${AUDIT_REQUIREMENTS:-}
if [[ -z "$req" ]]; then
    req="$work/requirements.txt"
    # shellcheck disable=SC2086  # UV may be "python3 -m uv"
    if ! $UV export --locked --no-hashes --all-groups --all-extras --no-emit-project --no-emit-workspace \
        --quiet --output-file "$req" 2>"$work/export.err"; then
        echo "audit failed: could not export the locked requirements (uv export --locked):" >&2
        cat "$work/export.err" >&2
        exit 1
    fi
fi

limit=()
if command -v timeout >/dev/null 2>&1; then
    limit=(timeout --kill-after=5 "$AUDIT_TIMEOUT")
fi
# Output goes to files, never to a pipe a stray child could hold open.
${limit[@]+"${limit[@]}"} "$PIP_AUDIT" --requirement "$req" --no-deps --disable-pip --format json \
    --vulnerability-service "$AUDIT_SERVICE" --timeout "$AUDIT_SOCKET_TIMEOUT" --progress-spinner off \
    >"$work/report.json" 2>"$work/stderr.txt" </dev/null
rc=$?

if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "$SKIPPED (no answer within ${AUDIT_TIMEOUT} s)"
    exit 0
fi

# pip-audit exits 0 (clean) or 1 (vulnerabilities) with a JSON report; anything else is an error.
"$PYTHON" - "$work/report.json" "$work/stderr.txt" "$rc" "$SKIPPED" <<'PY'
import json
import re
import sys

report_path, stderr_path, rc, skipped = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
stderr = open(stderr_path, encoding="utf-8", errors="replace").read()
NETWORK = re.compile(
    r"ConnectionError|ConnectTimeout|ReadTimeout|NameResolution|Name or service not known|"
    r"Temporary failure in name resolution|Max retries exceeded|Network is unreachable|"
    r"Connection refused|timed out|ProxyError|SSLError|RemoteDisconnected",
    re.IGNORECASE,
)
try:
    report = json.load(open(report_path, encoding="utf-8"))
    deps = report["dependencies"]
except (OSError, ValueError, KeyError, TypeError):
    report = None
if report is None:
    if NETWORK.search(stderr):
        reason = NETWORK.search(stderr).group(0)
        print(f"{skipped} ({reason})")
        sys.exit(0)
    print(f"audit failed: pip-audit exited {rc} without a report:", file=sys.stderr)
    print(stderr[-4000:], file=sys.stderr)
    sys.exit(1)

vulnerable = [d for d in deps if d.get("vulns")]
audited = [d for d in deps if "skip_reason" not in d]
if vulnerable:
    print(f"audit FAILED: {sum(len(d['vulns']) for d in vulnerable)} known vulnerabilities:")
    for d in vulnerable:
        for v in d["vulns"]:
            fixes = ", ".join(v.get("fix_versions") or []) or "no fix yet"
            print(f"  {d['name']} {d.get('version', '?')}: {v.get('id', '?')} (fixed in: {fixes})")
    sys.exit(1)
if rc != 0:
    print(f"audit failed: pip-audit exited {rc}:", file=sys.stderr)
    print(stderr[-4000:], file=sys.stderr)
    sys.exit(1)
if deps and not audited:
    # every lookup failed: a proxy or mirror answers "not found" when the service is out of reach
    print(f"{skipped} (none of {len(deps)} packages could be looked up)")
    sys.exit(0)
skips = [d["name"] for d in deps if "skip_reason" in d]
note = f"; not audited: {', '.join(skips)}" if skips else ""
print(f"audit passed: no known vulnerabilities in {len(audited)} audited packages{note}")
PY
