#!/usr/bin/env bash
# The statements PostgreSQL runs for one booking through the API and for one week view, listed
# per database connection from PostgreSQL's statement log (issue 29's counts in BENCHMARKS.md).
#
#   scripts/statements.sh target/release/berth [label]
#
# Starts that `berth serve` on a fresh database of the PostgreSQL at BERTH_TEST_PG_URL's server
# (default 127.0.0.1:5432, user postgres) with the demo fleet, signs in as the demo user, books
# once to warm up, then logs every statement (`ALTER SYSTEM SET log_min_duration_statement = 0`,
# reset afterwards) over one more booking (a bearer token, one listed GPU, two hours tomorrow,
# paid from the wallet at once) and one week-view page. Needs a superuser on a local server
# whose log is readable here (PG_LOG, default Debian's PostgreSQL 15 log). Connections that are
# not the request's (the notification worker's) are listed too: count the request's own.
set -euo pipefail
BIN=${1:?usage: scripts/statements.sh BERTH_BINARY [label]}
LABEL=${2:-run}
PG_LOG=${PG_LOG:-/var/log/postgresql/postgresql-15-main.log}
DB="berth_statements_${LABEL//[^a-z0-9_]/_}"
PORT=${PORT:-3107}
B="http://127.0.0.1:$PORT"
OUT=$(mktemp -d)
PSQL=(env PGOPTIONS="-c client_min_messages=warning" psql -q -h 127.0.0.1 -U postgres -d postgres)

"${PSQL[@]}" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
export BERTH_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable"
export BERTH_DEMO=true BERTH_BIND="127.0.0.1:$PORT" BERTH_LOG=warn BERTH_DEV_SIGN_IN=true BERTH_SITE_ROOT="$OUT"

serve() {
  "$BIN" serve >>"$OUT/serve.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do curl -sf "$B/readyz" >/dev/null && return; sleep 0.3; done
  echo "berth did not start: $OUT/serve.log" >&2
  exit 1
}

# Logs every statement while "$@" runs, then lists them per connection.
logged() {
  local name=$1
  shift
  "${PSQL[@]}" -c "ALTER SYSTEM SET log_min_duration_statement = 0" -c "SELECT pg_reload_conf()" >/dev/null
  sleep 1
  local before
  before=$(wc -l <"$PG_LOG")
  "$@"
  sleep 0.5
  "${PSQL[@]}" -c "ALTER SYSTEM RESET log_min_duration_statement" -c "SELECT pg_reload_conf()" >/dev/null
  tail -n +"$((before + 1))" "$PG_LOG" | grep "@$DB " >"$OUT/$name.log" || true
  python3 - "$OUT/$name.log" "$name" <<'PY'
import collections, re, sys
per = collections.OrderedDict()
for line in open(sys.argv[1]):
    m = re.search(r'\[(\d+)\] \S+ LOG:  duration: [\d.]+ ms  (execute [^:]+|statement): (.*)', line)
    if m:
        per.setdefault(m.group(1), []).append(re.sub(r'"\w+"\."\w+" AS "\w+",? ?', '', m.group(3))[:100])
print(f'## {sys.argv[2]}: {sum(len(s) for s in per.values())} statements on {len(per)} connections')
for pid, statements in per.items():
    print(f'- connection {pid}: {len(statements)}')
    for s in statements:
        print(f'    {s}')
PY
}

serve
curl -s -o /dev/null -c "$OUT/cookies" -b "$OUT/cookies" -H "Origin: $B" -d role=user -d return_to=/ "$B/auth/dev"
TOKEN=$("$BIN" token create demo-user@berth.invalid --name statements 2>/dev/null | tail -1)
START=$(date -u -d 'tomorrow 10:00' +%Y-%m-%dT%H:00:00Z)
END=$(date -u -d 'tomorrow 12:00' +%Y-%m-%dT%H:00:00Z)
book() {
  curl -s -o /dev/null -w "booking: %{http_code}\n" -H "Authorization: Bearer $TOKEN" \
    -H 'content-type: application/json' "$B/api/v1/reservations" \
    -d "{\"gpu_ids\": [$1], \"start\": \"$START\", \"end\": \"$END\"}"
}
book 1
logged booking book 2
week() {
  curl -s -o /dev/null -w "week view: %{http_code}\n" -b "$OUT/cookies" "$B/calendar?span=week&round=$1"
}
week 0
logged week-view week 1
kill "$SERVER"
wait "$SERVER" 2>/dev/null || true
"${PSQL[@]}" -c "DROP DATABASE $DB"
rm -rf "$OUT"
