//! Sessions kept in the application database (SQLite or PostgreSQL), as a tower-sessions store.
//! Like API tokens, a session id is stored only as its SHA-256 hash: a copy of the table (a
//! backup, a read-only database account) does not hand out signed-in sessions.

use crate::backend::entity::session;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};

/// A [`SessionStore`] on the `sessions` table.
#[derive(Debug, Clone)]
pub struct DbSessionStore {
    db: DatabaseConnection,
}

impl DbSessionStore {
    /// A store on `db`.
    pub fn new(db: DatabaseConnection) -> Self {
        Self { db }
    }
}

fn backend(err: DbErr) -> session_store::Error {
    session_store::Error::Backend(err.to_string())
}

fn to_chrono(at: time::OffsetDateTime) -> DateTime<Utc> {
    DateTime::from_timestamp(at.unix_timestamp(), at.nanosecond()).unwrap_or(DateTime::UNIX_EPOCH)
}

fn to_time(at: DateTime<Utc>) -> Result<time::OffsetDateTime, session_store::Error> {
    let nanos =
        i128::from(at.timestamp()) * 1_000_000_000 + i128::from(at.timestamp_subsec_nanos());
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .map_err(|err| session_store::Error::Decode(err.to_string()))
}

/// The key a session id is stored and looked up under: its hex SHA-256.
pub fn stored_id(id: &Id) -> String {
    crate::backend::auth::tokens::hash(&id.to_string())
}

fn row(record: &Record) -> Result<session::ActiveModel, session_store::Error> {
    Ok(session::ActiveModel {
        id: Set(stored_id(&record.id)),
        data: Set(serde_json::to_string(&record.data)
            .map_err(|err| session_store::Error::Encode(err.to_string()))?),
        expires_at: Set(to_chrono(record.expiry_date)),
    })
}

#[async_trait::async_trait]
impl SessionStore for DbSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // Ids are random; on the rare collision draw a new one instead of overwriting.
        loop {
            let inserted = session::Entity::insert(row(record)?)
                .on_conflict(
                    OnConflict::column(session::Column::Id)
                        .do_nothing()
                        .to_owned(),
                )
                .exec_without_returning(&self.db)
                .await
                .map_err(backend)?;
            if inserted == 1 {
                return Ok(());
            }
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        session::Entity::insert(row(record)?)
            .on_conflict(
                OnConflict::column(session::Column::Id)
                    .update_columns([session::Column::Data, session::Column::ExpiresAt])
                    .to_owned(),
            )
            .exec_without_returning(&self.db)
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let found = session::Entity::find_by_id(stored_id(id))
            .filter(session::Column::ExpiresAt.gt(Utc::now()))
            .one(&self.db)
            .await
            .map_err(backend)?;
        found
            .map(|row| {
                Ok(Record {
                    id: *id,
                    data: serde_json::from_str(&row.data)
                        .map_err(|err| session_store::Error::Decode(err.to_string()))?,
                    expiry_date: to_time(row.expires_at)?,
                })
            })
            .transpose()
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        session::Entity::delete_by_id(stored_id(id))
            .exec(&self.db)
            .await
            .map_err(backend)?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl ExpiredDeletion for DbSessionStore {
    async fn delete_expired(&self) -> session_store::Result<()> {
        session::Entity::delete_many()
            .filter(session::Column::ExpiresAt.lte(Utc::now()))
            .exec(&self.db)
            .await
            .map_err(backend)?;
        Ok(())
    }
}
