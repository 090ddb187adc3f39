#!/usr/bin/env bash
# The package as a stranger installs it: `pip install <checkout>` (not editable) into a fresh venv
# with only the default dependencies (no torch), then, from a folder outside the checkout,
# `dgrag index` -> `dgrag query --json` -> `dgrag serve` -> GET /health. Then the Spaces way on the
# same venv: requirements.txt adds nothing to what the package resolved, and `python app.py`, run
# from a copy of the repository's files with DGRAG_ADMIN_SECRET set, builds the demo index on
# first start and serves read-only. CI runs this after the test suite (.ci/run).
#
# Usage: bash scripts/check_install.sh   (KEEP=1 keeps the temporary folder; PYTHON picks the Python)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dgrag-install.XXXXXX")
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; fi
  if [ -z "${KEEP:-}" ]; then rm -rf "$TMP"; else echo "kept $TMP"; fi
}
trap cleanup EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False PIP_DISABLE_PIP_VERSION_CHECK=1
unset DGRAG_DB_PATH DGRAG_EMBEDDER DGRAG_ADMIN_SECRET DGRAG_DOCS_ROOT PYTHONPATH
t0=$(date +%s)
step() { echo "[check_install +$(( $(date +%s) - t0 ))s] $*"; }
fail() { echo "check_install: FAILED: $*" >&2; exit 1; }

# The repository's files as a clone has them (tracked, plus new files git does not ignore): no
# .venv, no egg-info, no build folder. This copy is also what a Space holds.
SRC="$TMP/src"
mkdir -p "$SRC"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
   [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf -) | tar -xf - -C "$SRC"

step "fresh venv, pip install $SRC (not editable, default dependencies)"
"$PY" -m venv "$TMP/venv"
VPY="$TMP/venv/bin/python"
"$VPY" -m pip install -q --upgrade pip >"$TMP/pip.log" 2>&1 || { tail -20 "$TMP/pip.log"; fail "pip upgrade"; }
"$VPY" -m pip install -q "$SRC" >>"$TMP/pip.log" 2>&1 || { grep -v '^WARNING: Location' "$TMP/pip.log" | tail -30; fail "pip install ."; }
"$VPY" -m pip check || fail "pip check"
echo "  venv size: $(du -sh "$TMP/venv" | cut -f1)"

WORK="$TMP/work"   # outside the checkout; nothing of the source tree on sys.path
mkdir -p "$WORK"
cp -r "$ROOT/tests/fixtures/docs" "$WORK/docs"
cd "$WORK"
SRC="$SRC" "$VPY" - <<'EOF' || fail "the installed package"
import importlib.util, os, sys
import dgrag
where = os.path.realpath(dgrag.__file__)
assert where.startswith(os.path.realpath(sys.prefix)), f"dgrag imported from {where}, not the venv"
assert not os.path.islink(os.path.dirname(where)), "an editable install"
for heavy in ("torch", "transformers", "sentence_transformers", "FlagEmbedding"):
    assert importlib.util.find_spec(heavy) is None, f"{heavy} is installed by default"
from dgrag.store.connect import migration_files
shipped = sorted(int(f[:4]) for f in os.listdir(os.path.join(os.environ["SRC"], "dgrag/store/migrations")) if f.endswith(".sql"))
assert shipped and [v for v, _, _ in migration_files()] == shipped, (migration_files(), shipped)  # every one, as package data
from dgrag.enrich.heuristic_openie import extract   # reads its word lists (package data) on import
assert extract("ArkUI\nArkUI is a declarative UI framework.", "ArkUI", "en")[0][0][0] == "ArkUI"
print("  dgrag from", os.path.dirname(where), "- no torch stack")
EOF
DGRAG="$TMP/venv/bin/dgrag"

step "dgrag index"
"$DGRAG" index docs --db "$WORK/x.db" >"$TMP/index.log" 2>&1 || { tail -20 "$TMP/index.log"; fail "dgrag index"; }
"$DGRAG" stats --db "$WORK/x.db" --json >"$WORK/stats.json" || fail "dgrag stats"

step "dgrag query --no-llm --json"
"$DGRAG" query "How do I create an ArkUI-X project?" --db "$WORK/x.db" --no-llm --json >"$WORK/q.json" \
  || fail "dgrag query"
"$VPY" - "$WORK/q.json" <<'EOF' || fail "the query's answer"
import json, sys
res = json.load(open(sys.argv[1]))
assert res["chunks"], "no chunk retrieved"
assert res["chunks"][0]["source_path"].startswith("en/"), res["chunks"][0]
print("  top chunk:", res["chunks"][0]["breadcrumb"])
EOF

free_port() { "$VPY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_health URL LOG READ_ONLY: poll /health until the index is loaded (the server process must live)
wait_health() {
  "$VPY" - "$1" "$3" "$SERVER_PID" <<'EOF' || { tail -30 "$2"; fail "GET $1"; }
import json, os, sys, time, urllib.request
url, read_only, pid = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
deadline = time.time() + 240
while True:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("the server exited")
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            health = json.load(r)
        if health.get("index_loaded"):
            break
    except OSError:
        pass
    if time.time() > deadline:
        sys.exit("no healthy answer within 240 s")
    time.sleep(1)
assert health["status"] == "ok", health
assert health["read_only"] is read_only, health
print("  /health:", {k: health.get(k) for k in ("status", "read_only", "nodes", "edges", "embedding_model")})
EOF
}
stop_server() { kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; }

step "dgrag serve, GET /health"
PORT=$(free_port)
"$DGRAG" serve --db "$WORK/x.db" --host 127.0.0.1 --port "$PORT" >"$TMP/serve.log" 2>&1 &
SERVER_PID=$!
wait_health "http://127.0.0.1:$PORT/health" "$TMP/serve.log" 0
stop_server

step "Spaces: requirements.txt adds nothing to the package's own resolution"
"$VPY" -m pip freeze --exclude-editable | sort >"$TMP/freeze.before"
"$VPY" -m pip install -q -r "$SRC/requirements.txt" >>"$TMP/pip.log" 2>&1 || fail "pip install -r requirements.txt"
"$VPY" -m pip freeze --exclude-editable | sort >"$TMP/freeze.after"
diff "$TMP/freeze.before" "$TMP/freeze.after" || fail "requirements.txt changed the installed set"

step "Spaces: python app.py from the repository's files, DGRAG_ADMIN_SECRET set, demo index built on first start"
PORT=$(free_port)
(cd "$SRC" && DGRAG_ADMIN_SECRET=check-install GRADIO_SERVER_NAME=127.0.0.1 GRADIO_SERVER_PORT="$PORT" \
   exec "$VPY" app.py) >"$TMP/app.log" 2>&1 &
SERVER_PID=$!
wait_health "http://127.0.0.1:$PORT/health" "$TMP/app.log" 1
"$VPY" - "http://127.0.0.1:$PORT" <<'EOF' || fail "the Space's app"
import json, sys, urllib.request
base = sys.argv[1]
req = urllib.request.Request(base + "/retrieve", data=json.dumps({"query": "ACE Tools"}).encode(),
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=60) as r:
    res = json.load(r)
assert res["rag_chunks_count"] > 0, res
with urllib.request.urlopen(base + "/", timeout=30) as r:
    assert r.status == 200 and b"<html" in r.read(4096).lower()
print("  /retrieve:", res["rag_chunks_count"], "chunks; the UI page loads")
EOF
stop_server
[ -f "$SRC/data/arkui-x.db" ] || fail "the demo index was not built in the Space's data/"

step "passed"
echo "check_install: ok in $(( $(date +%s) - t0 )) s"
