//! Webhooks: who has which, which receive an event, and their run of failures.

use crate::backend::entity::{notification_delivery, team_member, user, webhook};
use crate::domain::notify::{Channel, DeliveryStatus};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder,
};

/// Adds a webhook for `user_id` (of team `team_id`'s notices when given).
pub async fn insert(
    db: &impl ConnectionTrait,
    user_id: i64,
    team_id: Option<i64>,
    url: &str,
    secret: &str,
    now: DateTime<Utc>,
) -> Result<webhook::Model, DbErr> {
    webhook::ActiveModel {
        user_id: Set(user_id),
        team_id: Set(team_id),
        url: Set(url.to_owned()),
        secret: Set(secret.to_owned()),
        active: Set(true),
        failures: Set(0),
        last_error: Set(None),
        disabled_at: Set(None),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await
}

/// Webhook `id`.
pub async fn row(db: &impl ConnectionTrait, id: i64) -> Result<Option<webhook::Model>, DbErr> {
    webhook::Entity::find_by_id(id).one(db).await
}

/// The webhooks `user_id` made, oldest first.
pub async fn of_user(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<webhook::Model>, DbErr> {
    webhook::Entity::find()
        .filter(webhook::Column::UserId.eq(user_id))
        .order_by_asc(webhook::Column::Id)
        .all(db)
        .await
}

/// The webhooks `user_id` made and those of `teams`' notices (whoever made them), oldest first.
pub async fn of_user_and_teams(
    db: &impl ConnectionTrait,
    user_id: i64,
    teams: &[i64],
) -> Result<Vec<webhook::Model>, DbErr> {
    webhook::Entity::find()
        .filter(
            sea_orm::Condition::any()
                .add(webhook::Column::UserId.eq(user_id))
                .add(webhook::Column::TeamId.is_in(teams.iter().copied())),
        )
        .order_by_asc(webhook::Column::Id)
        .all(db)
        .await
}

/// Deletes webhook `id`; answers whether it did.
pub async fn delete(db: &impl ConnectionTrait, id: i64) -> Result<bool, DbErr> {
    let deleted = webhook::Entity::delete_by_id(id).exec(db).await?;
    Ok(deleted.rows_affected == 1)
}

/// The active webhooks of `users`' own notices.
pub async fn active_of_users(
    db: &impl ConnectionTrait,
    users: &[i64],
) -> Result<Vec<webhook::Model>, DbErr> {
    if users.is_empty() {
        return Ok(Vec::new());
    }
    webhook::Entity::find()
        .filter(webhook::Column::UserId.is_in(users.iter().copied()))
        .filter(webhook::Column::TeamId.is_null())
        .filter(webhook::Column::Active.eq(true))
        .order_by_asc(webhook::Column::Id)
        .all(db)
        .await
}

/// The active webhooks of team `team_id`'s notices whose owners still manage the team (its
/// admins and platform admins, as when the hook was made): a hook of someone who left the team
/// or lost its admin role gets nothing more.
pub async fn active_of_team(
    db: &impl ConnectionTrait,
    team_id: i64,
) -> Result<Vec<webhook::Model>, DbErr> {
    use sea_orm::Condition;
    use sea_orm::sea_query::Query;
    let team_admins = Query::select()
        .column(team_member::Column::UserId)
        .from(team_member::Entity)
        .and_where(team_member::Column::TeamId.eq(team_id))
        .and_where(team_member::Column::Role.eq("admin"))
        .to_owned();
    let platform_admins = Query::select()
        .column(user::Column::Id)
        .from(user::Entity)
        .and_where(user::Column::IsPlatformAdmin.eq(true))
        .to_owned();
    webhook::Entity::find()
        .filter(webhook::Column::TeamId.eq(team_id))
        .filter(webhook::Column::Active.eq(true))
        .filter(
            Condition::any()
                .add(webhook::Column::UserId.in_subquery(team_admins))
                .add(webhook::Column::UserId.in_subquery(platform_admins)),
        )
        .order_by_asc(webhook::Column::Id)
        .all(db)
        .await
}

/// A call to webhook `id` worked: its run of failures ends.
pub async fn succeeded(db: &impl ConnectionTrait, id: i64) -> Result<(), DbErr> {
    webhook::Entity::update_many()
        .col_expr(webhook::Column::Failures, Expr::value(0))
        .col_expr(
            webhook::Column::LastError,
            Expr::value(Option::<String>::None),
        )
        .filter(webhook::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// A call to webhook `id` failed with `error`: one more failure in a row; answers the webhook
/// as it is now.
pub async fn failed(
    db: &impl ConnectionTrait,
    id: i64,
    error: &str,
) -> Result<Option<webhook::Model>, DbErr> {
    webhook::Entity::update_many()
        .col_expr(
            webhook::Column::Failures,
            Expr::col(webhook::Column::Failures).add(1),
        )
        .col_expr(webhook::Column::LastError, Expr::value(error.to_owned()))
        .filter(webhook::Column::Id.eq(id))
        .exec(db)
        .await?;
    row(db, id).await
}

/// Disables webhook `id` at `now` (once: false when it was disabled already) and gives up its
/// deliveries still queued.
pub async fn disable(
    db: &impl ConnectionTrait,
    id: i64,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let disabled = webhook::Entity::update_many()
        .col_expr(webhook::Column::Active, Expr::value(false))
        .col_expr(webhook::Column::DisabledAt, Expr::value(now))
        .filter(webhook::Column::Id.eq(id))
        .filter(webhook::Column::Active.eq(true))
        .exec(db)
        .await?;
    if disabled.rows_affected == 0 {
        return Ok(false);
    }
    notification_delivery::Entity::update_many()
        .col_expr(
            notification_delivery::Column::Status,
            Expr::value(DeliveryStatus::Failed),
        )
        .col_expr(
            notification_delivery::Column::LastError,
            Expr::value("the webhook was turned off after repeated failures".to_owned()),
        )
        .filter(notification_delivery::Column::Channel.eq(Channel::Webhook))
        .filter(notification_delivery::Column::TargetId.eq(id))
        .filter(notification_delivery::Column::Status.eq(DeliveryStatus::Queued))
        .exec(db)
        .await?;
    Ok(true)
}
