//! Link settings for the `berth` binary that keep an idle portal small (BENCHMARKS.md, "Fleet
//! scale, sixth step"). On x86-64 Linux with glibc, where Rust links with its own LLD:
//! - the functions in `startup-order.txt` (what `berth serve` runs until it is idle, written by
//!   `scripts/startup-order.sh`) go first in the code, together, so that start-up touches a few
//!   MB of it instead of pages spread over all 70 MB; names the linker does not find (a list older
//!   than the code) are skipped without a warning;
//! - relative relocations are packed (`DT_RELR`, glibc 2.36 or later): 3 MB of relocation records
//!   become 40 KB, all of which the loader reads at start.
//!
//! `BERTH_PLAIN_LINK=1` leaves both out (another linker, an older glibc where the binary runs).

fn main() {
    println!("cargo:rerun-if-changed=startup-order.txt");
    println!("cargo:rerun-if-env-changed=BERTH_PLAIN_LINK");
    let target = |name: &str| std::env::var(name).unwrap_or_default();
    let linux_gnu_x86_64 = target("CARGO_CFG_TARGET_OS") == "linux"
        && target("CARGO_CFG_TARGET_ENV") == "gnu"
        && target("CARGO_CFG_TARGET_ARCH") == "x86_64";
    if !linux_gnu_x86_64 || std::env::var_os("BERTH_PLAIN_LINK").is_some_and(|v| v == "1") {
        return;
    }
    let list = std::path::Path::new(&target("CARGO_MANIFEST_DIR")).join("startup-order.txt");
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        list.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}
