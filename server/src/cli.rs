//! The command line: `berth serve` (default) and `berth migrate`.

use crate::admin::{self, AdminError};
use crate::configuration::Config;
use crate::startup::{self, Application, StartupError};
use berth_app::domain::user::{PlatformRole, UserSummary};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Stack of each server worker thread (the default 2 MiB overflows on large pages in debug builds).
const WORKER_STACK_BYTES: usize = 8 * 1024 * 1024;

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
    /// Manage users.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage personal API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// `berth user …`
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user, or update the name and role of the user with that e-mail address.
    Add {
        /// E-mail address.
        email: String,
        /// Display name (default: the part of the address before @).
        #[arg(long)]
        name: Option<String>,
        /// Make the user a platform admin.
        #[arg(long)]
        admin: bool,
    },
    /// List users.
    List,
}

/// `berth token …`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Issue an API token for a user and print it (it is shown only this once).
    Create {
        /// The user's e-mail address.
        email: String,
        /// What the token is for.
        #[arg(long)]
        name: String,
    },
    /// Revoke an API token by id.
    Revoke {
        /// The token's id, as printed by `berth token create`.
        id: i64,
    },
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
    // Rendering a large page (a week of 64 GPUs) recurses deeply in debug builds: give the
    // worker threads room.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(WORKER_STACK_BYTES)
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => return fail(&err),
    };
    let result: Result<(), Box<dyn std::fmt::Display>> = runtime.block_on(async move {
        match cli.command.unwrap_or(Command::Serve) {
            Command::Serve => serve(config).await.map_err(boxed),
            Command::Migrate => migrate(config).await.map_err(boxed),
            Command::User(command) => user(&config, command).await.map_err(boxed),
            Command::Token(command) => token(&config, command).await.map_err(boxed),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(&*err),
    }
}

fn boxed(err: impl std::fmt::Display + 'static) -> Box<dyn std::fmt::Display> {
    Box::new(err)
}

async fn user(config: &Config, command: UserCommand) -> Result<(), AdminError> {
    match command {
        UserCommand::Add { email, name, admin } => {
            print_user(&admin::add_user(config, &email, name.as_deref(), admin).await?);
        }
        UserCommand::List => admin::list_users(config).await?.iter().for_each(print_user),
    }
    Ok(())
}

async fn token(config: &Config, command: TokenCommand) -> Result<(), AdminError> {
    match command {
        TokenCommand::Create { email, name } => {
            let (id, token) = admin::create_token(config, &email, &name).await?;
            eprintln!("berth: token {id} created; it is shown only once:");
            println!("{token}");
        }
        TokenCommand::Revoke { id } => {
            admin::revoke_token(config, id).await?;
            eprintln!("berth: token {id} revoked");
        }
    }
    Ok(())
}

/// One tab-separated line: id, e-mail, name, role.
fn print_user(user: &UserSummary) {
    let role = match user.role {
        PlatformRole::User => "user",
        PlatformRole::PlatformAdmin => "platform-admin",
    };
    println!("{}\t{}\t{}\t{role}", user.id, user.email, user.name);
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
