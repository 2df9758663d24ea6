#!/usr/bin/env bash
# Regenerates server/startup-order.txt: the functions `berth serve` runs from its start until it
# is idle, which the linker places together at the front of the code (server/build.rs).
#
# Why: the kernel maps a binary's code 64 KB around each page fault. Started with its code in the
# compiler's order, an idle `berth serve` touched about 400 places spread over 70 MB of code and
# kept some 30 MB of it resident; with the start-up path in one run it keeps a third of that (see
# BENCHMARKS.md, "Fleet scale, sixth step").
#
# How: link the release binary with the current list, start it under `perf record -e page-faults`
# on a new store (SQLite, then PostgreSQL), wait until it is idle, and add every function whose
# code faulted and is not in the list yet. Each round finds the functions that the round before
# hid behind a neighbour's fault; it stops when a round finds fewer than MIN_NEW (default 8), or
# after ROUNDS rounds (default 12) per store. Run it after a toolchain or dependency update: a
# stale list never breaks the build (names the linker does not find are skipped), it only leaves
# more code resident.
#
#   scripts/startup-order.sh            # needs perf, curl, psql and PostgreSQL at BERTH_TEST_PG_URL
#   scripts/startup-order.sh URL...     # then also on these stores (as they are, e.g. a copy of
#                                       # the bench's generated store: `--scale large --serve`)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ROUNDS="${ROUNDS:-12}"
MIN_NEW="${MIN_NEW:-8}"
PG_URL="${BERTH_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
LIST="$ROOT/server/startup-order.txt"
for tool in perf curl psql nm; do
  command -v "$tool" >/dev/null || { echo "startup-order.sh needs $tool" >&2; exit 1; }
done
WORK="$(mktemp -d)"
PG_DB="berth_startup_order_$$"
cleanup() {
  psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
touch "$LIST"
cp "$LIST" "$WORK/order.txt"
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

# One round on the store at $1: link with the list, record a start, add what faulted.
round() {
  local url="$1" n="$2"
  # A new file name each round: cargo links again only when its arguments change. The last
  # --symbol-ordering-file wins over build.rs's.
  cp "$WORK/order.txt" "$WORK/order-$n.txt"
  cargo rustc --quiet --release -p berth-server --bin berth -- \
    -C "link-arg=-Wl,--symbol-ordering-file=$WORK/order-$n.txt"
  cp target/release/berth "$WORK/berth"
  mkdir -p "$WORK/site" "$WORK/data"
  BERTH_BIND="127.0.0.1:$PORT" BERTH_DATABASE_URL="$url" BERTH_DATA_DIR="$WORK/data" \
    BERTH_DEMO=true BERTH_DEV_SIGN_IN=true BERTH_LOG=error BERTH_SITE_ROOT="$WORK/site" \
    perf record -q -e page-faults -c 1 -d -o "$WORK/faults.data" "$WORK/berth" serve \
    >/dev/null 2>"$WORK/serve.log" &
  local recorder=$!
  local ready=""
  for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null; then ready=1; break; fi
    sleep 0.2
  done
  if [ -z "$ready" ]; then
    pkill -INT -f "^$WORK/berth serve" || true
    wait "$recorder" || true
    cat "$WORK/serve.log" >&2
    echo "berth serve did not start" >&2
    exit 1
  fi
  # Idle as the memory bench measures it: 5 s after it is ready.
  sleep 5
  pkill -INT -f "^$WORK/berth serve" || true
  wait "$recorder" || true
  # Instruction fetches: the faulting address is the instruction's own.
  perf script --no-demangle -i "$WORK/faults.data" -F addr,ip,sym,dso 2>/dev/null |
    awk -v bin="($WORK/berth)" '$1 == $4 && $3 == bin && $2 != "[unknown]" { print $2 }' |
    awk '!seen[$0]++' >"$WORK/faulted.txt"
  grep -vxFf "$WORK/order.txt" "$WORK/faulted.txt" >"$WORK/new.txt" || true
  NEW="$(wc -l <"$WORK/new.txt")"
  echo "round $n: $(wc -l <"$WORK/faulted.txt") code faults, $NEW functions added"
  cat "$WORK/new.txt" >>"$WORK/order.txt"
}

n=0
for store in sqlite postgres "$@"; do
  for _ in $(seq 1 "$ROUNDS"); do
    n=$((n + 1))
    if [ "$store" = sqlite ]; then
      rm -f "$WORK"/store.db*
      url="sqlite://$WORK/store.db?mode=rwc"
    elif [ "$store" = postgres ]; then
      psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null
      psql -q "$PG_URL" -c "CREATE DATABASE $PG_DB" >/dev/null
      url="${PG_URL%/*}/$PG_DB"
    else
      url="$store"
    fi
    round "$url" "$n"
    [ "$NEW" -ge "$MIN_NEW" ] || break
  done
done
# Names the binary no longer has (code changed since they were recorded) are dropped.
nm --defined-only "$WORK/berth" | awk '{ print $3 }' | sort -u >"$WORK/defined.txt"
awk 'NR == FNR { defined[$0] = 1; next } defined[$0] && !seen[$0]++' "$WORK/defined.txt" "$WORK/order.txt" >"$LIST"
echo "$(wc -l <"$LIST") functions in server/startup-order.txt"
