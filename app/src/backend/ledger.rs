//! The ledger service shared by the JSON API, the pages and the command line: validates a
//! credit grant or deduction, posts it in one write transaction (retried when the database is
//! busy or reports a serialization failure), and reads wallets.

use crate::backend::db;
use crate::backend::db::idempotency::{Claim, IdempotencyKey, replayed};
use crate::backend::db::ledger::{PostError, RecordReason, TransactionRecord};
use crate::backend::state::AppState;
use crate::domain::audit::AuditAction;
use crate::domain::ledger::{Account, CreditChange, PaymentDue, Wallet};
use crate::domain::money::{Currency, Money};
use crate::domain::notify::Audience;
use crate::domain::problem::Problem;
use crate::domain::reservation::PaymentStatus;
use crate::domain::user::{Email, UserSummary};
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DbErr};
use serde::{Deserialize, Serialize};

/// Where the money of a top-up comes from. A grant is posted only once its provider confirms it,
/// and the provider's id is recorded with it. Berth ships [`ManualProvider`]; a card processor
/// would be another implementation (with a sandbox to test it against).
pub trait PaymentProvider: Send + Sync + std::fmt::Debug {
    /// The name recorded with each top-up (`manual`).
    fn id(&self) -> &'static str;
    /// Confirms that `amount` for `user_id` was received (`reason`: what the admin recorded,
    /// such as an invoice number); an error refuses the grant and nothing is written.
    fn confirm(&self, user_id: i64, amount: Money, reason: &str) -> Result<(), AppError>;
}

/// Money received by invoice or bank transfer, recorded by a platform admin: the admin's grant,
/// with its reason, is the confirmation.
#[derive(Debug, Clone, Copy, Default)]
pub struct ManualProvider;

/// The id [`ManualProvider`] records.
pub const MANUAL_PROVIDER: &str = "manual";

impl PaymentProvider for ManualProvider {
    fn id(&self) -> &'static str {
        MANUAL_PROVIDER
    }

    fn confirm(&self, _user_id: i64, _amount: Money, _reason: &str) -> Result<(), AppError> {
        Ok(())
    }
}

/// A grant or deduction as sent by a platform admin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CreditForm {
    /// The user's e-mail address (a user's wallet).
    #[serde(default)]
    pub email: Option<String>,
    /// The team (a team's wallet).
    #[serde(default)]
    pub team_id: Option<i64>,
    /// Minor units: positive grants, negative deducts. Kept as JSON so that `10.5` or `"100"`
    /// get a field-level answer rather than a parser's.
    pub amount_minor: serde_json::Value,
    /// Why (recorded and shown to the user).
    pub reason: String,
}

/// What a grant or deduction did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditResult {
    /// The ledger transaction.
    pub transaction_id: i64,
    /// Whose wallet, for a user's.
    pub user: Option<UserSummary>,
    /// Whose wallet, for a team's.
    #[serde(default)]
    pub team_id: Option<i64>,
    /// Minor units moved into (positive) or out of (negative) the wallet.
    pub amount: Money,
    /// The wallet's balance afterwards.
    pub balance: Money,
}

/// Reads `amount_minor` as a whole number of minor units.
pub fn parse_minor_units(raw: &serde_json::Value) -> Result<i64, AppError> {
    raw.as_i64().ok_or_else(|| {
        AppError::invalid(
            "amount_minor",
            Problem::NotMinorUnits {
                raw: raw.to_string(),
            },
        )
    })
}

/// The error a short wallet answers: 409 with how much is missing.
pub fn insufficient(missing: Money, currency: &Currency) -> AppError {
    AppError::Conflict(Problem::InsufficientFunds {
        missing_minor: missing.minor(),
        missing: format!(
            "{} {}",
            missing.to_decimal_string(currency),
            currency.code()
        ),
    })
}

/// The wallet a grant or deduction is for.
#[derive(Debug, Clone, Copy)]
pub enum CreditWallet<'a> {
    /// A user's, by e-mail address.
    User(&'a str),
    /// A team's, by id.
    Team(i64),
}

/// A grant or deduction to make.
#[derive(Debug, Clone, Copy)]
pub struct CreditRequest<'a> {
    /// The acting platform admin (`None`: the command line or a seed).
    pub actor_id: Option<i64>,
    /// Whose wallet.
    pub wallet: CreditWallet<'a>,
    /// Minor units: positive grants, negative deducts.
    pub amount_minor: i64,
    /// Why.
    pub reason: &'a str,
    /// The client's `Idempotency-Key` (with an actor only).
    pub idempotency_key: Option<&'a str>,
    /// Where the money of a grant comes from.
    pub provider: &'a dyn PaymentProvider,
}

/// A platform admin (`actor`) grants (positive `amount_minor`) or deducts (negative) credits
/// for `wallet` by hand, money received by invoice or transfer (the state's provider), with
/// `reason`; the same `idempotency_key` again answers the first result. 403 for anyone else.
#[allow(clippy::too_many_arguments)]
pub async fn admin_credits(
    state: &AppState,
    actor: &crate::backend::auth::actor::Actor,
    wallet: CreditWallet<'_>,
    amount_minor: i64,
    reason: &str,
    idempotency_key: Option<&str>,
    now: DateTime<Utc>,
) -> Result<CreditResult, AppError> {
    let db = &state.db;
    actor.require_platform_admin()?;
    change_credits(
        db,
        &state.portal.currency,
        CreditRequest {
            actor_id: Some(actor.user.id),
            wallet,
            amount_minor,
            reason,
            idempotency_key: idempotency_key.filter(|key| !key.is_empty()),
            provider: state.payments.as_ref(),
        },
        now,
    )
    .await
}

/// Grants (positive) or deducts (negative) credits for the user with `email`, recorded with
/// `reason` and the acting admin. Callers check the actor's role ([`admin_credits`] does).
#[tracing::instrument(skip_all, fields(actor.id = request.actor_id))]
pub async fn change_credits(
    db: &DatabaseConnection,
    currency: &Currency,
    request: CreditRequest<'_>,
    now: DateTime<Utc>,
) -> Result<CreditResult, AppError> {
    let CreditRequest {
        actor_id,
        wallet,
        amount_minor,
        reason,
        idempotency_key,
        provider,
    } = request;
    let change = CreditChange::parse(amount_minor, reason)
        .map_err(|(field, problem)| AppError::invalid(field, problem))?;
    let (account, user, team_id) = match wallet {
        CreditWallet::User(email) => {
            let email = Email::parse(email).map_err(|_| {
                AppError::invalid(
                    "email",
                    Problem::NotAnEmail {
                        raw: email.to_owned(),
                    },
                )
            })?;
            let user = db::users::find_user_by_email(db, &email)
                .await?
                .ok_or_else(|| AppError::NotFound(format!("user {email}")))?;
            (Account::Wallet(user.id), Some(user), None)
        }
        CreditWallet::Team(team_id) => {
            db::teams::team_name(db, team_id)
                .await?
                .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
            (Account::TeamWallet(team_id), None, Some(team_id))
        }
    };
    let key = match (idempotency_key, actor_id) {
        (Some(key), Some(actor)) => {
            let parameters = (
                account.kind(),
                account.user_id(),
                team_id,
                amount_minor,
                change.reason(),
            );
            Some(IdempotencyKey::new(actor, key, "credits", &parameters)?)
        }
        _ => None,
    };
    if change.amount().minor() > 0 {
        // The provider confirms money received for a user; a team's is recorded under the
        // acting admin.
        let payer = user.as_ref().map(|u| u.id).or(actor_id).unwrap_or_default();
        provider.confirm(payer, change.amount(), change.reason())?;
    }
    let posting = change.posting(account);
    let record = TransactionRecord {
        kind: change.kind(),
        user_id: user.as_ref().map(|u| u.id),
        reservation_id: None,
        reverses_id: None,
        reason: RecordReason::Typed(change.reason()),
        actor_id,
        provider: (change.amount().minor() > 0).then(|| provider.id()),
        at: now,
    };
    let mut attempt = 0;
    let done = loop {
        attempt += 1;
        let result: Result<Result<CreditResult, AppError>, PostError> = async {
            let txn = db::begin_write(db).await?;
            if let Some(key) = &key {
                match db::idempotency::claim(&txn, key, now).await? {
                    Ok(Claim::Fresh) => {}
                    Ok(Claim::Replay { body, .. }) => return Ok(replayed(&body)),
                    Err(err) => return Ok(Err(err)),
                }
            }
            let before = db::ledger::account_balance(&txn, account).await?;
            let transaction_id = db::ledger::post(&txn, &record, &posting).await?;
            let done = CreditResult {
                transaction_id,
                user: user.clone(),
                team_id,
                amount: change.amount(),
                balance: db::ledger::account_balance(&txn, account).await?,
            };
            db::audit::append(
                &txn,
                db::audit::NewEntry {
                    at: now,
                    actor_id,
                    action: if change.amount().minor() > 0 {
                        AuditAction::CreditsGrant
                    } else {
                        AuditAction::CreditsDeduct
                    },
                    target_kind: if team_id.is_some() { "team" } else { "user" },
                    target_id: account
                        .user_id()
                        .or(team_id)
                        .unwrap_or_default()
                        .to_string(),
                    team_id,
                },
                Some(&serde_json::json!({ "balance_minor": before.minor() })),
                Some(&serde_json::json!({
                    "balance_minor": done.balance.minor(),
                    "amount_minor": change.amount().minor(),
                    "reason": change.reason(),
                    "transaction_id": transaction_id,
                })),
            )
            .await?;
            let audience = match account {
                Account::Wallet(user) => Some(Audience::User(user)),
                Account::TeamWallet(team) => Some(Audience::TeamAdmins(team)),
                Account::Revenue | Account::Funding => None,
            };
            if let Some(audience) = audience.filter(|_| change.amount().minor() > 0) {
                let added = crate::domain::notify::NewEvent::credits_added(
                    audience,
                    transaction_id,
                    change.amount().minor(),
                    now,
                );
                crate::backend::notify::record(&txn, &[added]).await?;
            }
            if let Some(key) = &key {
                db::idempotency::record(&txn, key, 201, &done).await?;
            }
            txn.commit().await?;
            Ok(Ok(done))
        }
        .await;
        match result {
            Ok(done) => break done?,
            Err(PostError::InsufficientFunds { missing, .. }) => {
                return Err(insufficient(missing, currency));
            }
            Err(PostError::Db(err)) if crate::backend::retry::again(attempt, &err) => {
                tracing::debug!(attempt, error = %err, "posting retried");
                crate::backend::retry::pause(attempt).await;
            }
            Err(PostError::Db(err)) => return Err(AppError::from(err)),
        }
    };
    tracing::info!(
        user.id = done.user.as_ref().map(|u| u.id),
        team.id = done.team_id,
        transaction.id = done.transaction_id,
        amount_minor,
        "credits changed"
    );
    // Reservations waiting for these credits are paid now rather than at the job's next run.
    if change.amount().minor() > 0 {
        match crate::backend::payment_job::retry_for(db, account, now).await {
            Ok(outcome) if outcome.charged > 0 => {
                tracing::info!(?account, ?outcome, "due payments made");
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, "paying due reservations after credits"),
        }
    }
    Ok(done)
}

/// `user_id`'s wallet with its latest movements, what upcoming charges hold, and the
/// reservations whose payment is due.
pub async fn wallet(
    state: &AppState,
    user_id: i64,
    page: &crate::domain::paging::PageRequest,
) -> Result<Wallet, DbErr> {
    let db = &state.db;
    let (currency, charge) = (&state.portal.currency, &state.portal.charge);
    let (balance, entries) = db::ledger::wallet(db, user_id, page).await?;
    let unpaid = db::payments::unpaid_of(db, user_id).await?;
    let on_hold = db::payments::held(&unpaid);
    let payments_due = unpaid
        .into_iter()
        .filter(|row| row.payment_status == PaymentStatus::Due)
        .map(|row| PaymentDue {
            reservation_id: row.id,
            price: Money::from_minor(row.price_minor),
            start: row.start_at,
            release_at: charge.release_at(row.start_at),
        })
        .collect();
    Ok(Wallet {
        user_id,
        balance,
        currency: currency.clone(),
        on_hold,
        payments_due,
        entries: entries.items,
        next: entries.next,
    })
}

/// Every confirmed reservation whose payment is due, soonest start first, with its release time
/// and its owner's balance (platform admins).
pub async fn payments_due(
    state: &AppState,
    actor: &crate::backend::auth::actor::Actor,
    now: DateTime<Utc>,
) -> Result<Vec<crate::domain::ledger::DuePayment>, AppError> {
    actor.require_platform_admin()?;
    let (db, charge) = (&state.db, &state.portal.charge);
    let rows = db::payments::due(db).await?;
    let owners: Vec<i64> = rows.iter().map(|row| row.owner_id).collect();
    let balances = db::ledger::balances_of(db, &owners).await?;
    let reservations = db::reservations::views(db, rows, now).await?;
    Ok(reservations
        .into_iter()
        .map(|reservation| crate::domain::ledger::DuePayment {
            release_at: charge.release_at(reservation.window.start()),
            balance: balances
                .get(&reservation.owner_id)
                .copied()
                .unwrap_or(Money::ZERO),
            reservation,
        })
        .collect())
}

/// A page of users with their wallet balances, oldest account first (platform admins).
pub async fn user_balances(
    state: &AppState,
    actor: &crate::backend::auth::actor::Actor,
    page: &crate::domain::paging::PageRequest,
) -> Result<crate::domain::paging::Page<(crate::domain::user::UserSummary, Money)>, AppError> {
    let db = &state.db;
    actor.require_platform_admin()?;
    let users = crate::backend::db::users::users_page(db, page).await?;
    let ids: Vec<i64> = users.items.iter().map(|user| user.id).collect();
    let balances = crate::backend::db::ledger::balances_of(db, &ids).await?;
    Ok(users.map(|user| {
        let balance = balances.get(&user.id).copied().unwrap_or(Money::ZERO);
        (user, balance)
    }))
}
