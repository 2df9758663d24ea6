//! Leader leases: one row per piece of work that only one portal replica may do at a time (the
//! simulated demo fleet, the agent reading a host's GPUs). A replica holds a lease while its
//! row names it and has not expired; it renews the row well before it expires, and another
//! replica takes the row over once it has. The check and the write are one statement, so two
//! replicas asking at once never both hold it.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ConnectionTrait, DbErr};

fn table() -> Alias {
    Alias::new("leader_leases")
}

/// Takes or renews lease `name` for `holder` until `until`, when it is free, expired at `now`
/// or already `holder`'s; answers whether `holder` holds it now.
pub async fn hold(
    db: &impl ConnectionTrait,
    name: &str,
    holder: &str,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let mut insert = Query::insert();
    insert
        .into_table(table())
        .columns([
            Alias::new("name"),
            Alias::new("holder"),
            Alias::new("expires_at"),
        ])
        .values_panic([name.into(), holder.into(), until.into()])
        .on_conflict(
            OnConflict::column(Alias::new("name"))
                .update_columns([Alias::new("holder"), Alias::new("expires_at")])
                .action_and_where(
                    Expr::col((table(), Alias::new("holder")))
                        .eq(holder)
                        .or(Expr::col((table(), Alias::new("expires_at"))).lte(now)),
                )
                .to_owned(),
        );
    Ok(db.execute(&insert).await?.rows_affected() == 1)
}

/// Gives lease `name` up if `holder` holds it (another replica may take it at once).
pub async fn release(db: &impl ConnectionTrait, name: &str, holder: &str) -> Result<(), DbErr> {
    let delete = Query::delete()
        .from_table(table())
        .and_where(Expr::col(Alias::new("name")).eq(name))
        .and_where(Expr::col(Alias::new("holder")).eq(holder))
        .to_owned();
    db.execute(&delete).await?;
    Ok(())
}

/// Who holds lease `name` at `now`, if anyone.
pub async fn holder(
    db: &impl ConnectionTrait,
    name: &str,
    now: DateTime<Utc>,
) -> Result<Option<String>, DbErr> {
    let select = Query::select()
        .column(Alias::new("holder"))
        .from(table())
        .and_where(Expr::col(Alias::new("name")).eq(name))
        .and_where(Expr::col(Alias::new("expires_at")).gt(now))
        .to_owned();
    match db.query_one(&select).await? {
        Some(row) => Ok(Some(row.try_get::<String>("", "holder")?)),
        None => Ok(None),
    }
}
