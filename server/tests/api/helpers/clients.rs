//! Users of each kind for a test: with an API token and test credits, with an empty wallet
//! (a platform admin is `PlatformRole::PlatformAdmin`), and the id behind an address. A browser
//! session as the demo user, team admin or platform admin is `TestApp::sign_in`.

use crate::helpers::TestApp;
use berth_app::backend::auth::tokens;
use berth_app::backend::db;
use berth_app::domain::user::{Email, NewUser, PlatformRole, TokenName, UserName};
use chrono::Utc;
use sea_orm::DatabaseConnection;

/// Credits every test user from [`user_token`] starts with (10,000.00).
pub(crate) const TEST_CREDITS_MINOR: i64 = 1_000_000;

/// A user with `email` and `role`, holding [`TEST_CREDITS_MINOR`] in their wallet; returns an
/// API token for them.
pub(crate) async fn user_token(app: &TestApp, email: &str, role: PlatformRole) -> String {
    user_token_on(&app.db, email, role).await
}

/// [`user_token`] on a database a portal of its own process serves.
pub(crate) async fn user_token_on(
    db: &DatabaseConnection,
    email: &str,
    role: PlatformRole,
) -> String {
    let token = unfunded_user_token_on(db, email, role).await;
    berth_app::backend::ledger::change_credits(
        db,
        &berth_app::domain::money::Currency::new("USD", "$", 2).unwrap(),
        berth_app::backend::ledger::CreditRequest {
            actor_id: None,
            wallet: berth_app::backend::ledger::CreditWallet::User(email),
            amount_minor: TEST_CREDITS_MINOR,
            reason: "test credits",
            idempotency_key: None,
            provider: &berth_app::backend::ledger::ManualProvider,
        },
        Utc::now(),
    )
    .await
    .unwrap();
    token
}

/// A user with `email` and `role` and an empty wallet; returns an API token for them.
pub(crate) async fn unfunded_user_token(app: &TestApp, email: &str, role: PlatformRole) -> String {
    unfunded_user_token_on(&app.db, email, role).await
}

async fn unfunded_user_token_on(
    database: &DatabaseConnection,
    email: &str,
    role: PlatformRole,
) -> String {
    let now = Utc::now();
    let user = db::users::upsert_user(
        database,
        &NewUser {
            email: Email::parse(email).unwrap(),
            name: UserName::parse(email.split('@').next().unwrap()).unwrap(),
            role,
        },
        now,
    )
    .await
    .unwrap();
    let (token, hash) = tokens::generate();
    db::api_tokens::insert_token(
        database,
        user.id,
        &TokenName::parse("test").unwrap(),
        &hash,
        now,
    )
    .await
    .unwrap();
    token
}
/// The user id behind an e-mail address.
pub(crate) async fn user_id(app: &TestApp, email: &str) -> i64 {
    db::users::find_user_by_email(
        &app.db,
        &berth_app::domain::user::Email::parse(email).unwrap(),
    )
    .await
    .unwrap()
    .unwrap()
    .id
}
