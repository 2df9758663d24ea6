#!/usr/bin/env bash
# Runs Berth on the embedded default (SQLite file in ./data, demo GPUs) at http://127.0.0.1:3000,
# with the development sign-in (demo accounts) on. Installs the build tools it needs on first
# use. Any `berth serve` setting can be passed in the environment, e.g.
# BERTH_BIND=0.0.0.0:8080 BERTH_DEV_SIGN_IN=false scripts/run.sh
# (Berth refuses the development sign-in on an address other machines reach unless
# BERTH_DEV_SIGN_IN_PUBLIC=true.)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

build_release

say "Starting Berth"
export BERTH_BIND="${BERTH_BIND:-127.0.0.1:3000}"
export BERTH_DEV_SIGN_IN="${BERTH_DEV_SIGN_IN:-true}"
exec "$ROOT/target/release/berth" serve "$@"
