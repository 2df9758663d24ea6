//! Faults with real processes (`faults.rs`), in a test binary of their own: cargo runs test
//! binaries one after another, so the load these tests put on the machine (two replicas, Caddy
//! and 200 clients) never slows the timing-sensitive tests of `api`; among themselves they take
//! turns. They share `api`'s helpers.

#[allow(dead_code, unused_imports, unused_macros)]
#[path = "../api/helpers/mod.rs"]
mod helpers;

mod faults;
mod services;
