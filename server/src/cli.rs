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

    /// Log at the configured level (`BERTH_LOG`, default `info`) in commands other than `serve`
    /// and `agent`, which otherwise print their answer and only warnings and errors besides.
    #[arg(long, short, global = true)]
    pub verbose: bool,

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
    /// Manage GPU nodes and their agents' tokens.
    #[command(subcommand)]
    Node(NodeCommand),
    /// Grant or deduct a user's prepaid credits.
    #[command(subcommand)]
    Credits(CreditsCommand),
    /// Run the node agent on a GPU host: register its GPUs with the portal and report their
    /// values every interval, until SIGTERM or Ctrl-C.
    Agent(Box<AgentArgs>),
    /// Copy the embedded SQLite database to a new file, consistently, while the portal runs.
    /// (PostgreSQL: use `pg_dump`, see the README.)
    Backup {
        /// The file to write; it must not exist.
        target: std::path::PathBuf,
    },
}

/// `berth node …`
#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// Add a node (if new) and print a token for its agent (shown only this once).
    Add {
        /// The node's name, unique in the portal.
        name: String,
        /// Accept the GPUs its agent reports for the first time at once; without it they wait
        /// as pending until a platform admin accepts them on the Nodes page.
        #[arg(long)]
        accept_new_gpus: bool,
    },
    /// List nodes with their agents' state.
    List,
    /// Revoke every token of a node.
    Revoke {
        /// The node's name.
        name: String,
    },
}

/// `berth credits …`
#[derive(Debug, Subcommand)]
pub enum CreditsCommand {
    /// Add credits to a user's wallet (money received by invoice or transfer, a gift).
    Grant {
        /// The user's e-mail address.
        email: String,
        /// Minor units of the portal's currency (cents: 10000 is 100.00).
        amount_minor: u32,
        /// Why (recorded, and shown to the user in the wallet).
        #[arg(long)]
        reason: String,
    },
    /// Take credits out of a user's wallet (a correction); refused if the wallet holds less.
    Deduct {
        /// The user's e-mail address.
        email: String,
        /// Minor units of the portal's currency.
        amount_minor: u32,
        /// Why (recorded, and shown to the user in the wallet).
        #[arg(long)]
        reason: String,
    },
}

/// `berth agent …`
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct AgentArgs {
    /// Instead of running the agent.
    #[command(subcommand)]
    pub action: Option<AgentAction>,
    /// The portal's address, e.g. https://berth.example.org.
    #[arg(long, env = "BERTH_AGENT_PORTAL", required = true)]
    pub portal: Option<String>,
    /// The node's token from `berth node add`. Other users of the host can read a command
    /// line: prefer `--token-file` or the `BERTH_AGENT_TOKEN` variable.
    #[arg(long, env = "BERTH_AGENT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A file holding the node's token (one line; readable only by the agent's user).
    #[arg(long, env = "BERTH_AGENT_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Seconds between samples.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub interval: u64,
    /// Path of libnvidia-ml.so to load (default: the system's libnvidia-ml.so.1).
    #[arg(long, env = "BERTH_AGENT_NVML_LIBRARY", value_name = "FILE")]
    pub nvml_library: Option<PathBuf>,
    /// Report eight simulated GPUs instead of reading NVML (labelled simulated in the portal).
    #[arg(long)]
    pub simulate: bool,
    /// Most samples kept while the portal is unreachable (oldest dropped first).
    #[arg(long, default_value_t = 100_000)]
    pub buffer: usize,
    /// Report telemetry only: do not open and close leases on this host.
    #[arg(long, env = "BERTH_AGENT_NO_ACCESS")]
    pub no_access: bool,
    /// Where the lease schedule is kept (`authorized-keys` reads it from there).
    #[arg(long, env = "BERTH_AGENT_STATE_DIR", value_name = "DIR", default_value = crate::agent::access::DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// Where each holder's `<login>.env` (CUDA_VISIBLE_DEVICES, MPS limits) is written.
    #[arg(long, env = "BERTH_AGENT_ENV_DIR", value_name = "DIR", default_value = crate::agent::access::DEFAULT_ENV_DIR)]
    pub env_dir: PathBuf,
    /// Grant the holder `rw` on the reserved GPUs' device files with POSIX ACLs (needs the
    /// driver's files not world-accessible: see the README).
    #[arg(long, env = "BERTH_AGENT_DEVICE_ACL")]
    pub device_acl: bool,
    /// Where the GPUs' device files are (`nvidia<minor>`).
    #[arg(
        long,
        env = "BERTH_AGENT_DEVICE_DIR",
        value_name = "DIR",
        default_value = "/dev"
    )]
    pub device_dir: PathBuf,
    /// Seconds between SIGTERM and SIGKILL for processes that must leave a GPU.
    #[arg(long, env = "BERTH_AGENT_GRACE_SECONDS", default_value_t = 120, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub grace_seconds: u64,
    /// Seconds before a lease's start at which the holder's keys are accepted.
    #[arg(long, env = "BERTH_AGENT_EARLY_ACCESS_SECONDS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub early_access_seconds: u64,
    /// Service accounts whose processes are never touched (root never is), comma-separated.
    #[arg(
        long,
        env = "BERTH_AGENT_EXEMPT_USERS",
        value_delimiter = ',',
        value_name = "USERS"
    )]
    pub exempt_users: Vec<String>,
    /// Do not prepare bookings' environment profiles on this host.
    #[arg(long, env = "BERTH_AGENT_NO_PREPARE")]
    pub no_prepare: bool,
    /// Where environment profiles are built and cached, per holder and content hash.
    #[arg(long, env = "BERTH_AGENT_ENV_CACHE_DIR", value_name = "DIR", default_value = crate::agent::prepare::DEFAULT_CACHE_DIR)]
    pub env_cache_dir: PathBuf,
    /// The Python interpreter of profiles that name no version (a profile naming `3.11` uses
    /// `python3.11`), found on `/usr/local/bin:/usr/bin:/bin`.
    #[arg(
        long,
        env = "BERTH_AGENT_PYTHON",
        value_name = "PROGRAM",
        default_value = "python3"
    )]
    pub python: String,
    /// Longest an environment build may run, seconds.
    #[arg(long, env = "BERTH_AGENT_BUILD_TIMEOUT_SECONDS", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub build_timeout_seconds: u64,
    /// Do not restore and save holders' workspaces on this host.
    #[arg(long, env = "BERTH_AGENT_NO_WORKSPACES")]
    pub no_workspaces: bool,
    /// Longest a workspace save or restore may run, seconds.
    #[arg(long, env = "BERTH_AGENT_WORKSPACE_TIMEOUT_SECONDS", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub workspace_timeout_seconds: u64,
}

/// `berth agent <action>`
#[derive(Debug, Subcommand)]
pub enum AgentAction {
    /// Print the SSH keys that may log in as USER now, from the agent's lease schedule (sshd's
    /// `AuthorizedKeysCommand`; no network call).
    AuthorizedKeys {
        /// Where the agent keeps its lease schedule.
        #[arg(long, env = "BERTH_AGENT_STATE_DIR", value_name = "DIR", default_value = crate::agent::access::DEFAULT_STATE_DIR)]
        state_dir: PathBuf,
        /// The user sshd asks about (`%u`).
        user: String,
    },
    /// Save or restore the workspace of a lease's holder (the agent runs this as the holder;
    /// prints what it did as JSON).
    Workspace {
        /// `save` or `restore`.
        #[arg(value_parser = ["save", "restore"])]
        what: String,
        /// The workspace directory.
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// The portal's address.
        #[arg(long, env = "BERTH_AGENT_PORTAL")]
        portal: String,
        /// The lease's workspace token.
        #[arg(long, env = "BERTH_WORKSPACE_TOKEN", hide_env_values = true)]
        token: String,
        /// Seconds a restore waits for the holder's previous lease's save.
        #[arg(long, default_value_t = 600)]
        wait_seconds: u64,
    },
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
        /// Days until it expires, 1 to 3650 (default: never).
        #[arg(long, value_name = "N")]
        expires_days: Option<String>,
        /// `write` (default: everything the user may do, except creating tokens) or `read`
        /// (only GET requests).
        #[arg(long, default_value = "write")]
        scope: String,
    },
    /// Revoke an API token by id.
    Revoke {
        /// The token's id, as printed by `berth token create`.
        id: i64,
    },
}

/// `berth agent workspace save|restore`: one JSON line on success, the reason on stderr (and,
/// for a failed save, a notice to the holder) otherwise.
fn workspace_action(
    what: &str,
    dir: &std::path::Path,
    portal: &str,
    token: &str,
    wait_seconds: u64,
) -> ExitCode {
    use crate::agent::workspace;
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => return fail(&err),
    };
    let client = workspace::Client::new(portal, token);
    let result = runtime.block_on(async {
        if what == "save" {
            match workspace::save(&client, dir).await {
                Ok(saved) => Ok(serde_json::to_string(&saved).unwrap_or_default()),
                Err(err) => {
                    // Over the quota the portal has told the holder already.
                    if !matches!(err, workspace::WorkspaceError::Portal { status: 422, .. }) {
                        let _ = client.report_failure(&err.to_string()).await;
                    }
                    Err(err)
                }
            }
        } else {
            workspace::restore(&client, dir, std::time::Duration::from_secs(wait_seconds))
                .await
                .map(|restored| serde_json::to_string(&restored).unwrap_or_default())
        }
    });
    match result {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(err) => fail(&err),
    }
}

/// Parses the command line, runs the command, and turns any failure into one error line.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // On every SSH login: answered from the schedule file alone, before anything else starts.
    if let Some(Command::Agent(args)) = &cli.command
        && let Some(AgentAction::AuthorizedKeys { state_dir, user }) = &args.action
    {
        use std::io::Write;
        let lines = crate::agent::access::authorized_keys(state_dir, user, chrono::Utc::now());
        let mut out = std::io::stdout().lock();
        for line in lines {
            if writeln!(out, "{line}").is_err() {
                return ExitCode::FAILURE;
            }
        }
        return ExitCode::SUCCESS;
    }
    if let Some(Command::Agent(args)) = &cli.command
        && let Some(AgentAction::Workspace {
            what,
            dir,
            portal,
            token,
            wait_seconds,
        }) = &args.action
    {
        return workspace_action(what, dir, portal, token, *wait_seconds);
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
    // Settings are read inside the runtime: the SMTP transport they build starts its connection
    // pool's task on it.
    let mut config = match runtime.block_on(async { Config::load(cli.config.as_deref()) }) {
        Ok(config) => config,
        Err(err) => return fail(&err),
    };
    // A one-shot command answers on stdout; its start-up (migrations and the like) is news only
    // with --verbose.
    let long_running = matches!(cli.command, None | Some(Command::Serve | Command::Agent(_)));
    if !long_running && !cli.verbose {
        config.log.filter = "warn".to_owned();
    }
    if let Err(err) = crate::logging::init(&config.log) {
        return fail(&err);
    }
    let result: Result<(), Box<dyn std::fmt::Display>> = runtime.block_on(async move {
        match cli.command.unwrap_or(Command::Serve) {
            Command::Serve => serve(config).await.map_err(boxed),
            Command::Migrate => migrate(config).await.map_err(boxed),
            Command::User(command) => user(&config, command).await.map_err(boxed),
            Command::Token(command) => token(&config, command).await.map_err(boxed),
            Command::Node(command) => node(&config, command).await.map_err(boxed),
            Command::Credits(command) => credits(&config, command).await.map_err(boxed),
            Command::Agent(args) => run_agent(*args).await.map_err(boxed),
            Command::Backup { target } => backup(&config, &target).await.map_err(boxed),
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
        TokenCommand::Create {
            email,
            name,
            expires_days,
            scope,
        } => {
            let (id, token) =
                admin::create_token(config, &email, &name, &scope, expires_days.as_deref()).await?;
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

async fn credits(config: &Config, command: CreditsCommand) -> Result<(), AdminError> {
    let (email, amount, reason) = match command {
        CreditsCommand::Grant {
            email,
            amount_minor,
            reason,
        } => (email, i64::from(amount_minor), reason),
        CreditsCommand::Deduct {
            email,
            amount_minor,
            reason,
        } => (email, -i64::from(amount_minor), reason),
    };
    let done = admin::change_credits(config, &email, amount, &reason).await?;
    let currency = &config.portal.currency;
    eprintln!(
        "berth: transaction {}: {} {} for {}; balance now {} {}",
        done.transaction_id,
        done.amount.to_decimal_string(currency),
        currency.code(),
        done.user
            .map(|user| user.email.as_str().to_owned())
            .unwrap_or_default(),
        done.balance.to_decimal_string(currency),
        currency.code()
    );
    println!("{}", done.balance.minor());
    Ok(())
}

async fn node(config: &Config, command: NodeCommand) -> Result<(), AdminError> {
    match command {
        NodeCommand::Add {
            name,
            accept_new_gpus,
        } => {
            let (id, token) = admin::add_node(config, &name, accept_new_gpus).await?;
            eprintln!(
                "berth: node {name} (id {id}) is ready; save this token (shown only once) in a \
                 file only the agent's user can read and run `berth agent --portal URL \
                 --token-file FILE` on it:"
            );
            println!("{token}");
        }
        NodeCommand::List => {
            let now = chrono::Utc::now();
            for node in admin::list_nodes(config).await? {
                let source = node.source.map_or("no agent", |s| s.as_str());
                let state = match node.last_seen {
                    None => "never reported".to_owned(),
                    Some(seen)
                        if berth_app::domain::telemetry::is_stale(
                            Some(seen),
                            node.interval_seconds,
                            now,
                        ) =>
                    {
                        format!("silent since {}", seen.to_rfc3339())
                    }
                    Some(seen) => format!("reporting (last {})", seen.to_rfc3339()),
                };
                println!("{}\t{}\t{source}\t{state}", node.node_id, node.name);
            }
        }
        NodeCommand::Revoke { name } => {
            let revoked = admin::revoke_node_tokens(config, &name).await?;
            eprintln!("berth: {revoked} token(s) of node {name} revoked");
        }
    }
    Ok(())
}

async fn run_agent(args: AgentArgs) -> Result<(), String> {
    use crate::agent::{self, AgentOptions, nvml::NvmlSource, simulated::SimulatedSource};
    let portal = args
        .portal
        .clone()
        .ok_or("--portal is required (or BERTH_AGENT_PORTAL)")?;
    let token = agent_token(args.token.as_deref(), args.token_file.as_deref())?;
    let options = AgentOptions {
        interval: std::time::Duration::from_secs(args.interval),
        max_buffered_samples: args.buffer.max(1),
        ..AgentOptions::default()
    };
    let source: Box<dyn agent::source::TelemetrySource> = if args.simulate {
        Box::new(SimulatedSource::demo_host(&options.hostname))
    } else {
        Box::new(
            NvmlSource::open(args.nvml_library.as_deref()).map_err(|err| {
                format!("{err} (install the NVIDIA driver, pass --nvml-library, or use --simulate)")
            })?,
        )
    };
    let transport = agent::transport::HttpTransport::new(&portal, &token)?;
    tracing::info!(portal = %portal, interval_s = args.interval, access = !args.no_access, "berth agent starting");
    let binary =
        std::env::current_exe().map_err(|err| format!("finding the berth binary: {err}"))?;
    let enforcement = (!args.no_access).then(|| agent::Enforcement {
        options: agent::access::AccessOptions {
            state_dir: args.state_dir.clone(),
            env_dir: args.env_dir.clone(),
            device_dir: args.device_dir.clone(),
            device_acl: args.device_acl,
            grace: std::time::Duration::from_secs(args.grace_seconds),
            early_access: std::time::Duration::from_secs(args.early_access_seconds),
            exempt_users: args.exempt_users.clone(),
            env_cache_dir: args.env_cache_dir.clone(),
            ..agent::access::AccessOptions::default()
        },
        processes: Box::new(agent::access::HostProcesses),
        clock: std::sync::Arc::new(berth_app::backend::clock::SystemClock),
        prepare: (!args.no_prepare).then(|| agent::prepare::PrepareOptions {
            cache_dir: args.env_cache_dir.clone(),
            python: args.python.clone(),
            timeout: std::time::Duration::from_secs(args.build_timeout_seconds),
            ..agent::prepare::PrepareOptions::default()
        }),
        workspaces: if args.no_workspaces {
            None
        } else {
            Some(agent::workspace::MoverOptions {
                portal: portal.clone(),
                binary: binary.clone(),
                timeout: std::time::Duration::from_secs(args.workspace_timeout_seconds),
                wait_for_save: agent::workspace::SAVE_WAIT,
            })
        },
    });
    agent::start_with_access(source, std::sync::Arc::new(transport), options, enforcement)
        .run_until(startup::shutdown_signal())
        .await
        .map_err(|err| err.to_string())
}

/// The agent's token: from `--token` / `BERTH_AGENT_TOKEN`, or the first line of
/// `--token-file` / `BERTH_AGENT_TOKEN_FILE` (surrounding white space and the line end dropped).
fn agent_token(token: Option<&str>, file: Option<&std::path::Path>) -> Result<String, String> {
    let (token, from) = match (token, file) {
        (Some(_), Some(_)) => {
            return Err(
                "give the node's token once: --token-file FILE or BERTH_AGENT_TOKEN, not both"
                    .into(),
            );
        }
        (None, None) => {
            return Err(
                "the node's token is missing: pass --token-file FILE (or set BERTH_AGENT_TOKEN)"
                    .into(),
            );
        }
        (Some(token), None) => (token.to_owned(), "--token".to_owned()),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|err| format!("cannot read the token file {}: {err}", path.display()))?;
            (text, format!("the token file {}", path.display()))
        }
    };
    let token = token.trim();
    if token.is_empty() {
        return Err(format!("{from} is empty: it must hold the node's token"));
    }
    if token.contains(char::is_whitespace) {
        return Err(format!(
            "{from} must hold only the node's token, on one line"
        ));
    }
    Ok(token.to_owned())
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

async fn backup(config: &Config, target: &std::path::Path) -> Result<(), AdminError> {
    let bytes = admin::backup(config, target).await?;
    println!(
        "berth: the database is copied to {} ({bytes} bytes); restore it by stopping the portal and putting it in place of the database file",
        target.display()
    );
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_token_comes_from_a_file_without_its_line_end() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "berth_abc\n").unwrap();
        assert_eq!(agent_token(None, Some(&file)).unwrap(), "berth_abc");
        std::fs::write(&file, "  berth_abc\r\n").unwrap();
        assert_eq!(agent_token(None, Some(&file)).unwrap(), "berth_abc");
        assert_eq!(agent_token(Some("berth_x"), None).unwrap(), "berth_x");
    }

    #[test]
    fn a_missing_empty_or_doubled_token_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = agent_token(None, Some(&missing)).unwrap_err();
        assert!(err.starts_with("cannot read the token file"), "{err}");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        let err = agent_token(None, Some(&empty)).unwrap_err();
        assert!(err.contains("is empty"), "{err}");
        std::fs::write(&empty, "berth_a\nberth_b\n").unwrap();
        assert!(
            agent_token(None, Some(&empty))
                .unwrap_err()
                .contains("one line")
        );
        assert!(
            agent_token(None, None)
                .unwrap_err()
                .contains("--token-file")
        );
        assert!(
            agent_token(Some("t"), Some(&missing))
                .unwrap_err()
                .contains("not both")
        );
        assert!(agent_token(Some(" "), None).unwrap_err().contains("empty"));
    }
}
