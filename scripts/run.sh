#!/usr/bin/env bash
# Runs Berth on the embedded default (SQLite file in ./data, demo GPUs) at http://127.0.0.1:3000.
# Installs the build tools it needs on first use. Any `berth serve` setting can be passed in the
# environment, e.g. BERTH_BIND=0.0.0.0:8080 scripts/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ensure_rust_tools
ensure_wasm_opt

say "Building Berth (release)"
cargo leptos build --release --split

say "Starting Berth"
exec "$ROOT/target/release/berth" serve "$@"
