//! The command line: `berth serve` (default) and `berth migrate`.

use crate::configuration::Config;
use crate::startup::{self, Application, StartupError};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Berth: a self-hosted GPU reservation portal.
#[derive(Debug, Parser)]
#[command(name = "berth", version, about, long_about = None)]
pub struct Cli {
    /// Settings file (TOML). Default: `berth.toml` in the working directory, if present.
    #[arg(long, global = true, env = "BERTH_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Sub-commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the portal (the default): apply migrations, add the demo fleet to an empty embedded
    /// database, and serve HTTP until SIGTERM or Ctrl-C.
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
}

/// Parses the command line, runs the command, and turns any failure into one error line.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::load(cli.config.as_deref()) {
        Ok(config) => config,
        Err(err) => return fail(&err),
    };
    if let Err(err) = crate::telemetry::init(&config.log) {
        return fail(&err);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return fail(&err),
    };
    let result = runtime.block_on(async move {
        match cli.command.unwrap_or(Command::Serve) {
            Command::Serve => serve(config).await,
            Command::Migrate => migrate(config).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(&err),
    }
}

async fn serve(config: Config) -> Result<(), StartupError> {
    let app = Application::build(config).await?;
    app.run_until_stopped(startup::shutdown_signal()).await
}

async fn migrate(config: Config) -> Result<(), StartupError> {
    let applied = startup::migrate_only(&config).await?;
    println!("berth: {applied} migration(s) applied; the schema is up to date");
    Ok(())
}

fn fail(err: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("berth: error: {err}");
    ExitCode::FAILURE
}
