# Shared set-up for scripts/run.sh and scripts/test.sh: installs what the build needs, once.
# Every step checks first, so a second run costs seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
CARGO_LEPTOS_VERSION="0.3.10"   # 0.3.11 needs rustc 1.96
BINARYEN_VERSION="132.0.0"      # never Debian's binaryen 108: its output breaks hydration

export PATH="$HOME/.cargo/bin:$TOOLS/node_modules/.bin:$PATH"
cd "$ROOT"

say() { printf '\n\033[1m==> [%s] %s\033[0m\n' "$(date -u +%H:%M:%S)" "$*"; }

# The wasm-bindgen version pinned in Cargo.lock; the CLI must match it exactly.
wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock"
}

ensure_rust_tools() {
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    say "Adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
  # Both tools are built as debug builds without debug info: they drive cargo and rewrite the
  # WASM, work measured in seconds either way, while their release builds (cargo-leptos's own
  # profile is fat LTO in one codegen unit) cost the 2-core CI machine three times the CPU.
  # BENCHMARKS.md, "The build tools and CI".
  if ! cargo leptos --version 2>/dev/null | grep -q "$CARGO_LEPTOS_VERSION"; then
    say "Installing cargo-leptos $CARGO_LEPTOS_VERSION (about 10 minutes, once)"
    CARGO_PROFILE_DEV_DEBUG=0 cargo install cargo-leptos --locked --debug --version "$CARGO_LEPTOS_VERSION"
  fi
  local wbg
  wbg="$(wasm_bindgen_version)"
  if ! wasm-bindgen --version 2>/dev/null | grep -q "$wbg"; then
    say "Installing wasm-bindgen-cli $wbg (about 3 minutes, once)"
    # Not --locked: one of its locked dependencies is missing from the registry mirror. Only the
    # `wasm-bindgen` program, without the TLS its test runner's downloads would need.
    CARGO_PROFILE_DEV_DEBUG=0 cargo install wasm-bindgen-cli --debug --no-default-features \
      --bin wasm-bindgen --version "$wbg"
  fi
}

ensure_wasm_opt() {
  if ! "$TOOLS/node_modules/.bin/wasm-opt" --version 2>/dev/null | grep -q "${BINARYEN_VERSION%%.*}"; then
    say "Installing wasm-opt (binaryen $BINARYEN_VERSION from npm)"
    mkdir -p "$TOOLS"
    (cd "$TOOLS" && npm install --no-audit --no-fund --no-save "binaryen@$BINARYEN_VERSION" >/dev/null)
  fi
}

# The release build `scripts/run.sh` serves and `deploy/Containerfile` packs: target/release/berth
# and the site in target/site.
build_release() {
  ensure_rust_tools
  ensure_wasm_opt
  say "Building Berth (release)"
  cargo leptos build --release --split
}
