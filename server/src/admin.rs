//! Administration from the command line: `berth user …` and `berth token …`, for bootstrapping
//! the first admins and for automation.

use crate::configuration::Config;
use crate::startup::{StartupError, open_and_migrate};
use berth_app::backend::auth::tokens;
use berth_app::backend::db;
use berth_app::domain::user::{Email, NewUser, PlatformRole, TokenName, UserName, UserSummary};
use chrono::Utc;
use sea_orm::DbErr;

/// Why an administration command failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Startup(#[from] StartupError),
    /// An argument is invalid.
    #[error("{0}")]
    Input(String),
    /// No user has that e-mail address.
    #[error("no user with e-mail address {0}; add one with `berth user add {0}`")]
    NoSuchUser(Email),
    /// No live token has that id.
    #[error("no active API token with id {0}")]
    NoSuchToken(i64),
    /// The ledger refused (unknown user, bad amount or reason, not enough credits).
    #[error("{0}")]
    Refused(berth_app::error::AppError),
    /// A query failed.
    #[error("database error: {0}")]
    Database(#[from] DbErr),
}

/// Adds a user (or updates the one with that address); the name defaults to the address's local
/// part.
pub async fn add_user(
    config: &Config,
    email: &str,
    name: Option<&str>,
    admin: bool,
) -> Result<UserSummary, AdminError> {
    let email = Email::parse(email).map_err(|err| AdminError::Input(err.to_string()))?;
    let default_name = email
        .as_str()
        .split('@')
        .next()
        .unwrap_or_default()
        .to_owned();
    let name = UserName::parse(name.unwrap_or(&default_name))
        .map_err(|err| AdminError::Input(format!("--name: {err}")))?;
    let role = if admin {
        PlatformRole::PlatformAdmin
    } else {
        PlatformRole::User
    };
    let (conn, _) = open_and_migrate(config).await?;
    let user = db::users::upsert_user(&conn, &NewUser { email, name, role }, Utc::now()).await?;
    let _ = conn.close().await;
    Ok(user)
}

/// Every user.
pub async fn list_users(config: &Config) -> Result<Vec<UserSummary>, AdminError> {
    let (conn, _) = open_and_migrate(config).await?;
    let users = db::users::list_users(&conn).await?;
    let _ = conn.close().await;
    Ok(users)
}

/// Issues a token for the user with `email`; returns its id and the token (shown once).
pub async fn create_token(
    config: &Config,
    email: &str,
    name: &str,
    scope: &str,
    expires_days: Option<&str>,
) -> Result<(i64, String), AdminError> {
    use berth_app::domain::api_token::{TokenScope, expires_at, parse_expiry_days};
    let email = Email::parse(email).map_err(|err| AdminError::Input(err.to_string()))?;
    let name = TokenName::parse(name).map_err(|err| AdminError::Input(format!("--name: {err}")))?;
    let scope =
        TokenScope::parse(scope).map_err(|err| AdminError::Input(format!("--scope: {err}")))?;
    let days = parse_expiry_days(expires_days.unwrap_or(""))
        .map_err(|err| AdminError::Input(format!("--expires-days: {err}")))?;
    if expires_days.is_some_and(|raw| raw.trim().is_empty()) {
        return Err(AdminError::Input(
            "--expires-days: must be between 1 and 3650".into(),
        ));
    }
    let (conn, _) = open_and_migrate(config).await?;
    let user = db::users::find_user_by_email(&conn, &email)
        .await?
        .ok_or_else(|| AdminError::NoSuchUser(email.clone()))?;
    let (token, hash) = tokens::generate();
    let now = Utc::now();
    let grant = db::api_tokens::TokenGrant {
        scope,
        expires_at: expires_at(now, days),
    };
    let id = db::api_tokens::insert_granted_token(&conn, user.id, &name, &hash, grant, now).await?;
    let _ = conn.close().await;
    Ok((id, token))
}

/// Revokes a token by id.
pub async fn revoke_token(config: &Config, id: i64) -> Result<(), AdminError> {
    let (conn, _) = open_and_migrate(config).await?;
    let revoked = db::api_tokens::revoke_token(&conn, id, Utc::now()).await?;
    let _ = conn.close().await;
    if revoked {
        Ok(())
    } else {
        Err(AdminError::NoSuchToken(id))
    }
}

/// Creates node `name` if needed and issues a token for its agent; returns the node's id and the
/// token (shown once). With `accept_new_gpus`, the GPUs its agent reports for the first time
/// are accepted at once instead of waiting for a platform admin.
pub async fn add_node(
    config: &Config,
    name: &str,
    accept_new_gpus: bool,
) -> Result<(i64, String), AdminError> {
    let (conn, _) = open_and_migrate(config).await?;
    let accept = accept_new_gpus.then_some(true);
    let issued =
        berth_app::backend::telemetry::issue_node_token(&conn, name, accept, None, Utc::now())
            .await
            .map_err(|err| AdminError::Input(err.to_string()));
    let _ = conn.close().await;
    issued
}

/// Revokes every token of node `name`; returns how many were live.
pub async fn revoke_node_tokens(config: &Config, name: &str) -> Result<u64, AdminError> {
    let (conn, _) = open_and_migrate(config).await?;
    let node = db::telemetry::node_states(&conn)
        .await?
        .into_iter()
        .find(|node| node.name == name)
        .ok_or_else(|| AdminError::Input(format!("no node named {name}")))?;
    let revoked =
        berth_app::backend::telemetry::revoke_node_tokens(&conn, node.node_id, None, Utc::now())
            .await
            .map_err(|err| AdminError::Input(err.to_string()))?;
    let _ = conn.close().await;
    Ok(revoked)
}

/// Every node's agent state.
pub async fn list_nodes(config: &Config) -> Result<Vec<db::telemetry::NodeAgentState>, AdminError> {
    let (conn, _) = open_and_migrate(config).await?;
    let nodes = db::telemetry::node_states(&conn).await?;
    let _ = conn.close().await;
    Ok(nodes)
}

/// Grants (positive) or deducts (negative) credits for the user with `email`, recorded as done
/// from the command line.
pub async fn change_credits(
    config: &Config,
    email: &str,
    amount_minor: i64,
    reason: &str,
) -> Result<berth_app::backend::ledger::CreditResult, AdminError> {
    let (conn, _) = open_and_migrate(config).await?;
    let done = berth_app::backend::ledger::change_credits(
        &conn,
        &config.portal.currency,
        berth_app::backend::ledger::CreditRequest {
            actor_id: None,
            wallet: berth_app::backend::ledger::CreditWallet::User(email),
            amount_minor,
            reason,
            idempotency_key: None,
            provider: &berth_app::backend::ledger::ManualProvider,
        },
        Utc::now(),
    )
    .await
    .map_err(AdminError::Refused);
    let _ = conn.close().await;
    done
}

/// Copies the embedded SQLite database to `target` while the portal may be serving: one
/// consistent snapshot (`VACUUM INTO`, which reads in one transaction and writes a compact file),
/// never over an existing file. Answers the copy's size in bytes. PostgreSQL is backed up with
/// its own tools (`pg_dump`), as the README says.
pub async fn backup(config: &Config, target: &std::path::Path) -> Result<u64, AdminError> {
    use sea_orm::ConnectionTrait;
    use secrecy::ExposeSecret;
    let url = config.database.url.expose_secret();
    if config.database.backend != crate::configuration::Backend::Sqlite {
        return Err(AdminError::Input(
            "berth backup copies the embedded SQLite database; back PostgreSQL up with \
             `pg_dump --format=custom --file=berth.dump \"$DATABASE_URL\"` (README: Backups)"
                .to_owned(),
        ));
    }
    let options = <sea_orm::sqlx::sqlite::SqliteConnectOptions as std::str::FromStr>::from_str(url)
        .map_err(|err| AdminError::Input(format!("cannot read the SQLite URL: {err}")))?;
    let file = options.get_filename();
    if !file.is_file() {
        return Err(AdminError::Input(format!(
            "there is no database at {} to back up",
            file.display()
        )));
    }
    if target.exists() {
        return Err(AdminError::Input(format!(
            "{} exists already; choose a new file (a backup never overwrites one)",
            target.display()
        )));
    }
    let Some(name) = target.to_str() else {
        return Err(AdminError::Input(format!(
            "{} is not a UTF-8 path",
            target.display()
        )));
    };
    let conn = db::connect(url).await.map_err(AdminError::Database)?;
    let copied = conn
        .execute_raw(sea_orm::Statement::from_sql_and_values(
            sea_orm::DbBackend::Sqlite,
            "VACUUM INTO ?",
            [name.into()],
        ))
        .await;
    let _ = conn.close().await;
    if let Err(err) = copied {
        // Nothing half-written is left behind under the backup's name.
        let _ = std::fs::remove_file(target);
        return Err(AdminError::Database(err));
    }
    Ok(std::fs::metadata(target).map(|m| m.len()).unwrap_or(0))
}
