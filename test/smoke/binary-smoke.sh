#!/usr/bin/env bash
# Smoke test of one svc executable on a clean system: the operator's path from first start to a
# clean stop, driven with curl and svc itself.
#
#   test/smoke/binary-smoke.sh [SVC [OTHER]]
#
#   SVC    the svc to test: dist/bin/svc-linux-<arch> (default), or bin/run.js (npm-installed)
#   OTHER  optional, the other build: it then opens the store SVC made (ledger verify, serve, a
#          deny for the agent SVC froze, a clean stop), and SVC verifies the ledger after it, so a
#          store made by one works with the other
#
# It runs from a fresh temp folder, with a fresh HOME (so the single executable unpacks its
# native code into a new cache), TMPDIR pointing at a folder that does not exist (nothing may
# need a writable /tmp), and a PATH holding only the few tools it uses. For a binary that PATH
# holds no node, and the test checks that; for the npm-installed svc (a script run by node) it
# adds node, which that svc needs. No node_modules is reachable from the temp folder.
#
# Steps: svc --version; svc init; svc serve on a free port; sign in and change the password; an
# agent with a mandate and a key through the console API; an allowed payment; svc receipt verify
# offline against the saved JWKS; svc freeze --local, then a deny; a service token through the
# console API and svc drill --json with it; svc backup; svc ledger verify; SIGTERM, exit 0.
# Exits 0 when every step passed; otherwise names the step and shows the server's log.
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
target="${1:-$here/dist/bin/svc-linux-$(uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/')}"
[ -x "$target" ] || { echo "smoke: $target is not an executable (npm run build:binary makes it)" >&2; exit 2; }
target="$(cd "$(dirname "$target")" && pwd)/$(basename "$target")"
other="${2:-}"
if [ -n "$other" ]; then
  [ -x "$other" ] || { echo "smoke: $other is not an executable" >&2; exit 2; }
  other="$(cd "$(dirname "$other")" && pwd)/$(basename "$other")"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/svc-smoke.XXXXXX")"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A PATH of only what this script runs.
sandbox="$work/bin"
mkdir -p "$sandbox" "$work/home" "$work/run"
for tool in bash curl grep sed head tail cat sleep seq rm stat ln cp cmp find chmod; do
  ln -s "$(command -v "$tool")" "$sandbox/$tool"
done
ln -s "$target" "$sandbox/svc"
kind=binary
if [ "$(head -c 2 "$target")" = '#!' ]; then
  kind=script
  ln -s "$(command -v node)" "$sandbox/node"
fi
for name in $(env | sed -n 's/^\(SVC_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$name"; done
unset NODE_OPTIONS NODE_PATH NODE_ENV XDG_CACHE_HOME CACHE_DIRECTORY
saved_path="$PATH"
export PATH="$sandbox"
export HOME="$work/home"
export TMPDIR="$work/no-such-tmp"
cd "$work/run"

step=""
fail() {
  echo "smoke: FAILED at: $step" >&2
  echo "smoke: $*" >&2
  if [ -f "$work/serve.err" ]; then
    echo "--- server log (last 30 lines) ---" >&2
    tail -n 30 "$work/serve.err" >&2
  fi
  exit 1
}
begin() {
  step="$1"
  echo "smoke: $step"
}
# The first string value of "NAME" in a JSON document on stdin (ids, keys, tokens: no escapes).
field() { grep -o "\"$1\": *\"[^\"]*\"" | head -n 1 | sed 's/^.*: *"\(.*\)"$/\1/'; }
# A console call as the signed-in owner: METHOD PATH [JSON]; prints the body, fails on a non-2xx.
api() {
  local out status
  out="$(curl -sS --max-time 20 -b "$work/jar" -c "$work/jar" -X "$1" -H 'x-svc-csrf: 1' \
    -H 'content-type: application/json' ${3:+--data "$3"} -w '\n%{http_code}' "$base$2")" || fail "curl $1 $2"
  status="${out##*$'\n'}"
  out="${out%$'\n'*}"
  case "$status" in 2??) printf '%s' "$out" ;; *) fail "$1 $2 answered $status: $out" ;; esac
}

begin "no node on PATH ($kind)"
if [ "$kind" = binary ] && command -v node >/dev/null 2>&1; then fail "node is reachable: $(command -v node)"; fi
[ ! -e "$work/node_modules" ] && [ ! -e "$work/run/node_modules" ] || fail "a node_modules is reachable"

begin "svc --version names the version and commit"
version="$(svc --version)" || fail "exit $?"
echo "  $version"
echo "$version" | grep -Eq '^svc/[0-9]+\.[0-9]+\.[0-9]+[^ ]*\+[0-9a-z.]+ ' || fail "no version+commit in: $version"
svc --help >/dev/null || fail "svc --help exited $?"
if [ "$kind" = binary ] && [ -e "$HOME/.cache" ]; then fail "--version and --help wrote to $HOME/.cache"; fi

data="$work/data"
first_password='smoke test first passphrase'
new_password='smoke test second passphrase'
begin "svc init"
init="$(printf '%s' "$first_password" | svc init --data-dir "$data" --workspace Smoke \
  --owner-email owner@smoke.example --owner-password-stdin --json)" || fail "exit $?"
wid="$(echo "$init" | field workspaceId)"
[ -n "$wid" ] || fail "no workspaceId in: $init"

# serve COMMAND: starts COMMAND serve on a free port and sets server_pid and base.
serve() {
  "$1" serve --data-dir "$data" --port 0 --json >"$work/serve.out" 2>"$work/serve.err" &
  server_pid=$!
  base=""
  for _ in $(seq 1 600); do
    base="$(field listening <"$work/serve.out" || true)"
    [ -n "$base" ] && break
    kill -0 "$server_pid" 2>/dev/null || fail "the server exited"
    sleep 0.1
  done
  [ -n "$base" ] || fail "the server did not say where it listens within a minute"
  echo "  $base"
  [ "$(curl -sS --max-time 10 "$base/healthz")" = '{"status":"ok"}' ] || fail "/healthz is not ok"
}
# stop: SIGTERM to the server, which must exit 0.
stop() {
  kill -TERM "$server_pid"
  local code=0
  wait "$server_pid" || code=$?
  server_pid=""
  [ "$code" = 0 ] || fail "the server exited $code"
}

begin "svc serve on a free port"
serve svc

begin "the console's pages and assets, and the error docs, are served"
# page PATH TEXT: GET PATH answers 200 with TEXT in its body.
page() {
  local body
  body="$(curl -sS --max-time 10 --fail "$base$1")" || fail "GET $1 did not answer 200"
  # A here-string, not a pipe: grep -q stops at the first match, and under pipefail the writer's
  # SIGPIPE on a long body (the console's script) would read as a failure.
  grep -q "$2" <<<"$body" || fail "GET $1 does not hold $2"
}
page /login 'data-page="login"'
page /console/app.js 'consolePage'
page /console/app.css 'body'
page /docs/errors 'idempotency_conflict'

begin "sign in and change the password"
api POST /api/session "{\"email\":\"owner@smoke.example\",\"password\":\"$first_password\"}" >/dev/null
api PUT /api/me/password "{\"currentPassword\":\"$first_password\",\"newPassword\":\"$new_password\"}" >/dev/null
rm -f "$work/jar"
api POST /api/session "{\"email\":\"owner@smoke.example\",\"password\":\"$new_password\"}" >/dev/null
grep -q "\"$wid\"" <<<"$(api GET /api/me)" || fail "/api/me does not list workspace $wid"

begin "an agent, its mandate and its key through the console API"
aid="$(api POST "/api/w/$wid/agents" '{"name":"smoke-bot"}' | field id)"
[ -n "$aid" ] || fail "no agent id"
api PUT "/api/w/$wid/agents/$aid/mandate" \
  '{"rules":[{"actions":["payment"],"merchants":["acme.example"],"currencies":["EUR"],"maxAmount":5000}]}' >/dev/null
agent_key="$(api POST "/api/w/$wid/agents/$aid/keys" '{}' | field key)"
[ -n "$agent_key" ] || fail "no agent key"

authorize() {
  curl -sS --max-time 20 "$base/v1/actions/authorize" -H "authorization: Bearer $agent_key" \
    -H 'content-type: application/json' -H "idempotency-key: $1" \
    --data '{"type":"payment","summary":"Pay invoice 1043 to Acme","payment":{"amount":1250,"currency":"EUR","merchant":"acme.example"}}'
}
begin "authorize: an allowed payment with a receipt"
allowed="$(authorize smoke-1)" || fail "curl"
[ "$(echo "$allowed" | field decision)" = allow ] || fail "not allowed: $allowed"
receipt="$(echo "$allowed" | field receipt)"
[ -n "$receipt" ] || fail "no receipt: $allowed"

begin "svc receipt verify, offline against the saved JWKS"
curl -sS --max-time 10 -o "$work/jwks.json" "$base/.well-known/jwks.json" || fail "cannot fetch the JWKS"
verified="$(svc receipt verify "$receipt" --jwks "$work/jwks.json" --json)" || fail "exit $?: $verified"
grep -q '"valid": *true' <<<"$verified" || fail "not valid: $verified"

begin "svc freeze --local, then a deny"
svc freeze --local --data-dir "$data" --agent "$aid" --reason "smoke test" --json >/dev/null || fail "exit $?"
denied="$(authorize smoke-2)" || fail "curl"
[ "$(echo "$denied" | field decision)" = deny ] || fail "not denied: $denied"
grep -q 'agent_frozen' <<<"$denied" || fail "no agent_frozen signal: $denied"

begin "svc drill --json with a service token made in the console"
token="$(api POST "/api/w/$wid/service-tokens" '{"name":"smoke-ci","scopes":["agents:freeze"],"expiresInDays":1}' | field token)"
[ -n "$token" ] || fail "no service token"
drill="$(SVC_TOKEN="$token" svc drill --url "$base" --json)" || fail "exit $?: $drill"
grep -q '"passed": *true' <<<"$drill" || fail "the drill did not pass: $drill"

begin "svc backup"
svc backup --data-dir "$data" --out "$work/backup.mdb" --json >/dev/null || fail "exit $?"
[ -s "$work/backup.mdb" ] || fail "no backup file"
[ "$(stat -c %a "$work/backup.mdb")" = 600 ] || fail "the backup is not mode 0600"

begin "svc ledger verify"
svc ledger verify --data-dir "$data" --json >"$work/ledger.json" || fail "exit $?: $(cat "$work/ledger.json")"

begin "SIGTERM: a clean stop, exit 0"
stop

if [ "$kind" = binary ]; then
  begin "the native code's cache is private"
  cache="$HOME/.cache/svc"
  [ "$(stat -c %a "$cache")" = 700 ] || fail "$cache is not 0700"
  for dir in "$cache"/*/; do [ "$(stat -c %a "$dir")" = 700 ] || fail "$dir is not 0700"; done

  begin "a changed native file in the cache is never loaded: it is written again"
  addon="$(find "$cache" -name '*.node' | head -n 1)"
  [ -n "$addon" ] || fail "no .node file in $cache"
  cp "$addon" "$work/addon.orig"
  chmod u+w "$addon"
  { printf 'X'; tail -c +2 "$work/addon.orig"; } >"$addon" # same size, first byte changed
  cmp -s "$addon" "$work/addon.orig" && fail "the test did not change the file"
  svc ledger verify --data-dir "$data" --json >/dev/null || fail "ledger verify after the change exited $?"
  cmp -s "$addon" "$work/addon.orig" || fail "the changed file was not written again"
  [ "$(stat -c %a "$addon")" = 400 ] || fail "the rewritten file is not read-only"

  begin "without a usable cache folder: commands that open the store exit 3 saying why; others still work"
  out="$(SVC_CACHE_DIR="$work/addon.orig" svc ledger verify --data-dir "$data" --json)" && fail "exit 0 without a cache"
  grep -q 'SVC_CACHE_DIR' <<<"$out" || fail "the error does not name SVC_CACHE_DIR: $out"
  grep -q '"exitCode": *3' <<<"$out" || fail "not exit 3: $out"
  SVC_CACHE_DIR="$work/addon.orig" svc receipt verify "$receipt" --jwks "$work/jwks.json" --json >/dev/null ||
    fail "receipt verify needs no native code, yet failed"
fi

if [ -n "$other" ]; then
  ln -s "$other" "$sandbox/svc-other"
  if [ "$(head -c 2 "$other")" = '#!' ] && [ ! -e "$sandbox/node" ]; then ln -s "$(PATH="$saved_path" command -v node)" "$sandbox/node"; fi

  begin "the other build ($other) verifies the ledger of this store"
  svc-other ledger verify --data-dir "$data" --json >"$work/ledger-other.json" || fail "exit $?: $(cat "$work/ledger-other.json")"

  begin "the other build serves this store: sign-in, and the frozen agent is denied"
  serve svc-other
  rm -f "$work/jar"
  api POST /api/session "{\"email\":\"owner@smoke.example\",\"password\":\"$new_password\"}" >/dev/null
  denied="$(authorize smoke-3)" || fail "curl"
  grep -q 'agent_frozen' <<<"$denied" || fail "not denied as frozen: $denied"
  stop

  begin "and this build verifies the ledger after the other wrote to it"
  svc ledger verify --data-dir "$data" --json >"$work/ledger-again.json" || fail "exit $?: $(cat "$work/ledger-again.json")"
fi

echo "smoke: passed ($target${other:+, with $other})"
