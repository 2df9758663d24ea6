//! The `berth` binary. Everything lives in the `berth_server` library so tests can start the
//! same application in-process.

fn main() -> std::process::ExitCode {
    berth_server::cli::main()
}
