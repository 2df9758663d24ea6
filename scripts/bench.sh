#!/usr/bin/env bash
# Benchmarks (results are copied into BENCHMARKS.md): the size of the release front end, then the
# portal benchmark on SQLite and PostgreSQL. Arguments go to the benchmark, e.g. `--backend
# sqlite` or `--quick`. PostgreSQL must run (BERTH_TEST_PG_URL, as for the tests).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ensure_rust_tools
ensure_wasm_opt

say "Release front end (WASM + JS + CSS)"
cargo leptos build --release --frontend-only
for file in target/site/pkg/berth.wasm target/site/pkg/berth.js target/site/pkg/berth.css; do
  printf '%-28s %8d bytes, gzip -9: %8d bytes\n' "$file" "$(stat -c %s "$file")" "$(gzip -9 -c "$file" | wc -c)"
done

say "Portal benchmark (release build)"
cargo bench -p berth-server --bench portal -- "$@"
