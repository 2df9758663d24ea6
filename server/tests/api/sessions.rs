//! The database-backed session store, on both backends.

use crate::helpers::{Backend, spawn_app};
use berth_app::backend::db::sessions::DbSessionStore;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{ExpiredDeletion, SessionStore};

fn record(minutes_from_now: i64) -> Record {
    let mut data = std::collections::HashMap::new();
    data.insert("user_id".to_owned(), serde_json::json!(42));
    Record {
        id: Id::default(),
        data,
        expiry_date: time::OffsetDateTime::now_utc() + time::Duration::minutes(minutes_from_now),
    }
}

async fn sessions_are_created_loaded_updated_and_deleted(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let store = DbSessionStore::new(app.db.clone());

    let mut session = record(60);
    store.create(&mut session).await.unwrap();
    let loaded = store.load(&session.id).await.unwrap().expect("stored");
    assert_eq!(loaded.data, session.data);
    assert_eq!(
        loaded.expiry_date.unix_timestamp(),
        session.expiry_date.unix_timestamp()
    );

    session
        .data
        .insert("locale".to_owned(), serde_json::json!("pt-BR"));
    store.save(&session).await.unwrap();
    let loaded = store.load(&session.id).await.unwrap().expect("stored");
    assert_eq!(loaded.data["locale"], "pt-BR");

    store.delete(&session.id).await.unwrap();
    assert!(store.load(&session.id).await.unwrap().is_none());
    app.stop().await;
}

async fn expired_sessions_are_neither_loaded_nor_kept(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let store = DbSessionStore::new(app.db.clone());
    let mut expired = record(-1);
    let mut live = record(60);
    store.create(&mut expired).await.unwrap();
    store.create(&mut live).await.unwrap();
    assert!(store.load(&expired.id).await.unwrap().is_none());

    store.delete_expired().await.unwrap();
    assert!(store.load(&live.id).await.unwrap().is_some());
    let mut again = Record {
        id: expired.id,
        ..record(60)
    };
    // The expired row is gone, so its id can be created afresh without a collision.
    store.create(&mut again).await.unwrap();
    assert_eq!(again.id, expired.id);
    app.stop().await;
}

async fn creating_with_a_taken_id_draws_a_new_one(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let store = DbSessionStore::new(app.db.clone());
    let mut first = record(60);
    store.create(&mut first).await.unwrap();
    let mut second = Record {
        id: first.id,
        ..record(60)
    };
    second
        .data
        .insert("other".to_owned(), serde_json::json!(true));
    store.create(&mut second).await.unwrap();
    assert_ne!(
        second.id, first.id,
        "the existing session is not overwritten"
    );
    let kept = store.load(&first.id).await.unwrap().unwrap();
    assert!(!kept.data.contains_key("other"));
    app.stop().await;
}

/// The `expires_at` of the only session row.
async fn only_expiry(app: &crate::helpers::TestApp) -> chrono::DateTime<chrono::Utc> {
    use berth_app::backend::entity::session;
    use sea_orm::EntityTrait;
    let rows = session::Entity::find().all(&app.db).await.unwrap();
    assert_eq!(rows.len(), 1, "one session");
    rows[0].expires_at
}

/// Sets the `expires_at` of every session row.
async fn set_expiry(app: &crate::helpers::TestApp, at: chrono::DateTime<chrono::Utc>) {
    use berth_app::backend::entity::session;
    use sea_orm::{EntityTrait, sea_query::Expr};
    session::Entity::update_many()
        .col_expr(session::Column::ExpiresAt, Expr::value(at))
        .exec(&app.db)
        .await
        .unwrap();
}

async fn using_the_portal_pushes_the_inactivity_deadline_back_once_a_day(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let now = chrono::Utc::now();
    // Signed in long ago: an hour of the 7 days left.
    set_expiry(&app, now + chrono::Duration::hours(1)).await;
    let (status, _) = app.get_text("/").await;
    assert_eq!(status, 200);
    assert!(
        only_expiry(&app).await > now + chrono::Duration::days(6),
        "a visit pushes the end back to 7 days from now"
    );

    // Later the same day: no write for every page.
    // Whole seconds: PostgreSQL keeps microseconds.
    let soon = chrono::DurationRound::duration_trunc(
        now + chrono::Duration::hours(2),
        chrono::Duration::seconds(1),
    )
    .unwrap();
    set_expiry(&app, soon).await;
    let (status, _) = app.get_text("/calendar").await;
    assert_eq!(status, 200);
    assert_eq!(only_expiry(&app).await, soon, "at most one write a day");
    app.stop().await;
}

/// The cookie's session id is not in the table; its SHA-256 is, and the session works.
async fn session_ids_are_stored_only_as_their_hash(backend: Backend) {
    use berth_app::backend::entity::session;
    use sea_orm::EntityTrait;
    let (app, _db) = spawn_app(backend).await;
    let client = crate::helpers::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let signed_in = client
        .post(app.url("/auth/dev"))
        .form(&[("role", "user"), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    let set_cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    let pair = set_cookie.split(';').next().unwrap().to_owned();
    let id = pair.split_once('=').unwrap().1.to_owned();
    assert!(!id.is_empty());
    let rows = session::Entity::find().all(&app.db).await.unwrap();
    assert!(
        rows.iter()
            .all(|row| row.id != id && !row.data.contains(&id)),
        "the plain id is stored nowhere"
    );
    assert!(
        rows.iter()
            .any(|row| row.id == berth_app::backend::auth::tokens::hash(&id)),
        "its SHA-256 is the key"
    );
    let me = client
        .get(app.url("/api/v1/me"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status().as_u16(), 200);
    // Someone who reads the table cannot use what is there as a cookie.
    for row in &rows {
        let stolen = client
            .get(app.url("/api/v1/me"))
            .header("cookie", format!("berth_session={}", row.id))
            .send()
            .await
            .unwrap();
        assert_eq!(stolen.status().as_u16(), 401);
    }
    app.stop().await;
}

crate::on_both_backends!(
    session_ids_are_stored_only_as_their_hash,
    sessions_are_created_loaded_updated_and_deleted,
    expired_sessions_are_neither_loaded_nor_kept,
    creating_with_a_taken_id_draws_a_new_one,
    using_the_portal_pushes_the_inactivity_deadline_back_once_a_day,
);
