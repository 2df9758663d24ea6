//! The audit log's table: appending an entry inside the action's own transaction, and reading
//! the log newest first.

use crate::backend::entity::audit_entry;
use crate::domain::audit::{AUDIT_PAGE, AuditAction, AuditEntry, AuditFilter};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::{NotSet, Set},
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};
use serde::Serialize;

/// An entry to append.
#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    /// When.
    pub at: DateTime<Utc>,
    /// Who (None: the command line or a job).
    pub actor_id: Option<i64>,
    /// What.
    pub action: AuditAction,
    /// The kind of thing acted on.
    pub target_kind: &'a str,
    /// Its id.
    pub target_id: String,
    /// The team concerned.
    pub team_id: Option<i64>,
}

/// Appends `entry` with the values `before` and `after` (serialized as JSON). Call it inside
/// the transaction that makes the change, so the log has an entry exactly when the change
/// happened.
pub async fn append<B: Serialize, A: Serialize>(
    db: &impl ConnectionTrait,
    entry: NewEntry<'_>,
    before: Option<&B>,
    after: Option<&A>,
) -> Result<i64, DbErr> {
    let before = before.map(to_json).transpose()?;
    let after = after.map(to_json).transpose()?;
    let inserted = audit_entry::Entity::insert(audit_entry::ActiveModel {
        id: NotSet,
        at: Set(entry.at),
        actor_id: Set(entry.actor_id),
        action: Set(entry.action.as_str().to_owned()),
        target_kind: Set(entry.target_kind.to_owned()),
        target_id: Set(entry.target_id),
        team_id: Set(entry.team_id),
        before_json: Set(before),
        after_json: Set(after),
    })
    .exec(db)
    .await?;
    Ok(inserted.last_insert_id)
}

fn to_json<T: Serialize>(value: &T) -> Result<String, DbErr> {
    serde_json::to_string(value).map_err(|err| DbErr::Custom(format!("audit values: {err}")))
}

/// A page of the log, newest first, with the actors' names.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &AuditFilter,
) -> Result<Vec<AuditEntry>, DbErr> {
    let mut query = audit_entry::Entity::find()
        .order_by_desc(audit_entry::Column::Id)
        .limit(filter.limit.unwrap_or(AUDIT_PAGE));
    if let Some(action) = filter.action {
        query = query.filter(audit_entry::Column::Action.eq(action.as_str()));
    }
    if let Some(team_id) = filter.team_id {
        query = query.filter(audit_entry::Column::TeamId.eq(team_id));
    }
    if let Some(before_id) = filter.before_id {
        query = query.filter(audit_entry::Column::Id.lt(before_id));
    }
    let rows = query.all(db).await?;
    let mut actor_ids: Vec<i64> = rows.iter().filter_map(|row| row.actor_id).collect();
    actor_ids.sort_unstable();
    actor_ids.dedup();
    let names = super::users::names_of(db, &actor_ids).await?;
    rows.into_iter()
        .map(|row| {
            let action = AuditAction::parse(&row.action).ok_or_else(|| {
                DbErr::Custom(format!(
                    "audit_log.id={}: unknown action {}",
                    row.id, row.action
                ))
            })?;
            Ok(AuditEntry {
                id: row.id,
                at: row.at,
                actor: row.actor_id.map(|id| {
                    let name = names.get(&id).cloned().unwrap_or_else(|| format!("#{id}"));
                    (id, name)
                }),
                action,
                target_kind: row.target_kind,
                target_id: row.target_id,
                team_id: row.team_id,
                before: row.before_json,
                after: row.after_json,
            })
        })
        .collect()
}
