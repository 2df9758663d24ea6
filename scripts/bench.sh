#!/usr/bin/env bash
# Benchmarks (results are copied into BENCHMARKS.md): the size of the release front end, then the
# portal benchmark on SQLite and PostgreSQL. Arguments go to the benchmark, e.g. `--backend
# sqlite` or `--quick`. PostgreSQL must run (BERTH_TEST_PG_URL, as for the tests).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ensure_rust_tools
ensure_wasm_opt

say "Release front end (WASM + JS + CSS), split by page"
cargo leptos build --release --frontend-only --split
node scripts/wasm-sizes.mjs target/site/pkg

say "Portal benchmark (release build)"
cargo bench -p berth-server --bench portal -- "$@"
