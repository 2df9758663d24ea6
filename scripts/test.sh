#!/usr/bin/env bash
# Runs every check: formatting, clippy (server and browser builds), all Rust tests on SQLite and
# PostgreSQL, and the Playwright suite in Debian's Chromium. Installs what is missing.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PG_URL="${BERTH_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
export BERTH_TEST_PG_URL="$PG_URL"

ensure_chromium() {
  if ! command -v chromium >/dev/null 2>&1; then
    say "Installing Chromium (Debian package) for the end-to-end tests"
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  fi
}

# What the node-access tests start or call on this host: OpenSSH's server (logins during a
# lease) and the acl tools (device ACLs, read back with getfacl). Debian packages.
ensure_node_tools() {
  if [ ! -x /usr/sbin/sshd ] || ! command -v setfacl >/dev/null 2>&1; then
    say "Installing openssh-server and acl (Debian packages) for the node-access tests"
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openssh-server acl >/dev/null
  fi
}

# What the deployment tests run: Caddy (deploy/Caddyfile in front of the replicas) and promtool
# (from Debian's prometheus package: checks and unit-tests the alert rules). Debian packages;
# no service is started.
ensure_deploy_tools() {
  if ! command -v caddy >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
    say "Installing caddy and prometheus (Debian packages) for the deployment tests"
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends caddy prometheus >/dev/null
  fi
}

ensure_node_modules() {
  if [ ! -x end2end/node_modules/.bin/playwright ] \
     || [ end2end/package-lock.json -nt end2end/node_modules/.package-lock.json ]; then
    say "Installing the end-to-end test packages (npm ci)"
    (cd end2end && npm ci --no-audit --no-fund)
  fi
}

# Python tools the tests start on loopback: aiosmtpd (the SMTP server the e-mail tests send to),
# icalendar (parses the calendar files Berth attaches), moto (its server is the S3 the
# workspace store is tested against), jsonschema (checks the incident export against its schema)
# and localstripe (the fake Stripe the card payments are tested against), in a venv under .tools/.
PY_TOOLS=("aiosmtpd==1.4.6" "icalendar==7.3.2" "moto[server]==5.2.5" "jsonschema==4.26.0" "localstripe==1.15.10")
ensure_python_tools() {
  local venv="$TOOLS/venv" stamp="$TOOLS/venv/.berth-tools"
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${PY_TOOLS[*]}" ]; then
    say "Installing the Python test tools (${PY_TOOLS[*]}) in .tools/venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${PY_TOOLS[@]}"
    echo "${PY_TOOLS[*]}" > "$stamp"
  fi
  export BERTH_TEST_PYTHON="$venv/bin/python"
}

check_postgres() {
  local hostport host port
  hostport="$(sed -E 's#^[a-z]+://([^@/]*@)?([^/?]*).*#\2#' <<<"$PG_URL")"
  host="${hostport%%:*}"; port="${hostport##*:}"
  [ "$port" = "$hostport" ] && port=5432
  if ! (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
    echo "error: PostgreSQL is not reachable at $host:$port ($PG_URL)." >&2
    echo "The tests run every data test on SQLite and PostgreSQL, so PostgreSQL must run." >&2
    echo "Start it with: pg_ctlcluster --skip-systemctl-redirect \$(ls /etc/postgresql) main start" >&2
    echo "or point BERTH_TEST_PG_URL at a server where the user may create databases." >&2
    exit 1
  fi
}

# Stop the browser build running alongside (below) when the script ends early.
kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
WORK="$(mktemp -d)"
WEB_PID=""
trap '[ -n "$WEB_PID" ] && kill_tree "$WEB_PID"; rm -rf "$WORK"' EXIT

ensure_chromium
ensure_node_tools
ensure_deploy_tools
ensure_node_modules
ensure_python_tools
check_postgres

# Clippy's lints run inside the builds rather than before them: `clippy-driver` compiles the
# workspace's own crates (as `cargo clippy` runs it, with `-D warnings`) and plain rustc their
# dependencies, so the dependencies are compiled once, for the tests, instead of checked for
# clippy first and then built again (BENCHMARKS.md, "The build tools and CI").
CLIPPY_DRIVER="$(command -v clippy-driver)" || {
  echo "error: clippy-driver is not on PATH; install it with: rustup component add clippy" >&2
  exit 1
}
with_clippy() {
  CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" \
    RUSTC_WORKSPACE_WRAPPER="$CLIPPY_DRIVER" "$@"
}

# The browser side needs none of the server's build and builds in its own folder
# (target/front), so it runs alongside from the start, at low priority: the browser build tools
# (cargo-leptos and wasm-bindgen, about 10 minutes of CPU to install on a fresh machine), then
# the front end with clippy's lints (hydrate, wasm32). The server's tests leave the CPU idle for
# long stretches (they wait on the databases, servers and timers they start); the browser side
# takes those. Its output is shown when it ends.
rustup target list --installed | grep -qx wasm32-unknown-unknown \
  || rustup target add wasm32-unknown-unknown
browser_side() {
  renice -n 10 -p "$BASHPID" >/dev/null
  ensure_rust_tools
  say "Building the front end (WASM + CSS), with clippy's lints (hydrate, wasm32)"
  with_clippy cargo leptos build --frontend-only --split
}
(browser_side) > "$WORK/browser.log" 2>&1 &
WEB_PID=$!

say "cargo fmt --check"
cargo fmt --all --check

RESULTS="$WORK/results"
RUST_PACKAGES=(-p berth-app -p berth-server -p berth-migrations -p berth-fake-nvml)

say "Rust build with clippy's lints (ssr; libraries, programs, tests, benches)"
with_clippy cargo test --locked "${RUST_PACKAGES[@]}" --all-targets --no-run

say "Rust tests (unit, and HTTP integration on SQLite and PostgreSQL); the browser build alongside"
with_clippy cargo test --locked "${RUST_PACKAGES[@]}" 2>&1 | tee -a "$RESULTS"

say "Waiting for the browser build"
web_status=0
wait "$WEB_PID" || web_status=$?
WEB_PID=""
cat "$WORK/browser.log"
if [ "$web_status" -ne 0 ]; then
  echo "error: the browser build failed (exit status $web_status; its output is above)" >&2
  exit "$web_status"
fi

say "Playwright in Chromium"
rm -rf end2end/.data end2end/test-results
(cd end2end && npx playwright test) 2>&1 | tee -a "$RESULTS"

# One closing line for every test that ran: cargo's "test result:" lines and Playwright's total.
passed=$(grep -hoE '(ok\. [0-9]+ passed|^ +[0-9]+ passed)' "$RESULTS" | grep -oE '[0-9]+' | awk '{ n += $1 } END { print n + 0 }')
say "All checks passed"
echo "Summary: ${passed} passed, 0 failed"
