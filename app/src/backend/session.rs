//! Who is signed in, with what the navigation shows about them.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::domain::sign_in::SignedInUser;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;

/// `actor` with their teams and the counts the navigation shows (payments due, displaced
/// bookings, approvals waiting for them).
pub async fn signed_in_user(
    db: &DatabaseConnection,
    actor: Actor,
    now: DateTime<Utc>,
) -> Result<SignedInUser, AppError> {
    let (teams, payments_due, displaced, approvals_waiting) = tokio::try_join!(
        db::teams::memberships_of(db, actor.user.id),
        db::payments::count_due(db, actor.user.id),
        db::quotas::count_displaced(db, actor.user.id, now),
        db::quotas::count_awaiting_for_admin(db, actor.user.id),
    )?;
    Ok(SignedInUser {
        user: actor.user,
        teams,
        payments_due,
        displaced,
        approvals_waiting,
    })
}

/// Every user (platform admins).
pub async fn users(
    db: &DatabaseConnection,
    actor: &Actor,
) -> Result<Vec<crate::domain::user::UserSummary>, AppError> {
    actor.require_platform_admin()?;
    Ok(db::users::list_users(db).await?)
}
