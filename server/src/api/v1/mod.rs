//! The JSON API under `/api/v1`, authenticated with `Authorization: Bearer <token>` (or the
//! session cookie), one file per resource. Errors are `{"error", "message", "code"?, "field"?,
//! "clash"?}` with 401 / 403 / 404 / 409 / 413 / 422 (503 with `Retry-After` when the database
//! is busy). The rules live in `berth_app::backend`; these handlers only read requests and write
//! answers. What every resource reads the same way is here: a query or body that cannot be read,
//! and the `Idempotency-Key` header.

pub mod access;
pub mod agent;
pub mod cards;
pub mod csv_export;
pub mod fleet;
pub mod incidents;
pub mod ledger;
pub mod maintenance;
pub mod profiles;
pub mod quotas;
pub mod reclaim;
pub mod reports;
pub mod reservations;
pub mod teams;
pub mod telemetry;
pub mod users;
pub mod watches;
pub mod workspace;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::routing::{delete, get, patch, post, put};
use berth_app::backend::reservations::MAX_IDEMPOTENCY_KEY_CHARS;
use berth_app::backend::state::AppState;
use berth_app::domain::paging::Page;
use berth_app::domain::problem::Problem;
use berth_app::error::AppError;

/// `?limit=&cursor=` of a list that pages by cursor alone.
#[derive(Debug, serde::Deserialize)]
pub struct PageQuery {
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    cursor: Option<String>,
}

impl PageQuery {
    /// The page asked for of list `kind` (a problem names `limit` or `cursor`).
    pub fn page(
        &self,
        kind: berth_app::domain::paging::ListKind,
    ) -> Result<berth_app::domain::paging::PageRequest, AppError> {
        berth_app::backend::input::page(kind, self.limit, self.cursor.as_deref())
    }
}

fn query_error(rejection: QueryRejection) -> AppError {
    AppError::invalid(
        "query",
        Problem::Unreadable {
            detail: rejection.body_text(),
        },
    )
}

/// A JSON body that could not be read, as a 422 on `body` (a 413 when it is over the endpoint's
/// size limit).
pub fn body_error(rejection: JsonRejection) -> AppError {
    if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        return AppError::TooLarge;
    }
    AppError::invalid(
        "body",
        Problem::Unreadable {
            detail: rejection.body_text(),
        },
    )
}

/// The `Idempotency-Key` header, if sent (422 when it is not text).
pub fn idempotency_key(headers: &axum::http::HeaderMap) -> Result<Option<&str>, AppError> {
    headers
        .get("idempotency-key")
        .map(|value| {
            value.to_str().map_err(|_| {
                AppError::invalid(
                    "Idempotency-Key",
                    Problem::BadIdempotencyKey {
                        max: MAX_IDEMPOTENCY_KEY_CHARS,
                    },
                )
            })
        })
        .transpose()
}

/// The request's own address with `cursor` set to `next`: the next page, as a relative URL.
fn next_page_url(uri: &axum::http::Uri, next: &str) -> String {
    let pairs = url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .filter(|(name, _)| name != "cursor")
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect::<Vec<_>>();
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in &pairs {
        query.append_pair(name, value);
    }
    query.append_pair("cursor", next);
    format!("{}?{}", uri.path(), query.finish())
}

/// The headers that point at the next page of a list: `Link: <…>; rel="next"` (RFC 8288) and
/// `X-Next-Cursor` with the cursor alone. None on the last page.
pub fn next_page_headers(uri: &axum::http::Uri, next: Option<&str>) -> axum::http::HeaderMap {
    let mut headers = axum::http::HeaderMap::new();
    if let Some(next) = next {
        let link = format!("<{}>; rel=\"next\"", next_page_url(uri, next));
        if let (Ok(link), Ok(cursor)) = (link.parse(), next.parse()) {
            headers.insert(axum::http::header::LINK, link);
            headers.insert("x-next-cursor", cursor);
        }
    }
    headers
}

/// A page of a list as the API answers it: the rows as a JSON array, the next page in the
/// headers ([`next_page_headers`]).
pub fn paged<T: serde::Serialize>(
    uri: &axum::http::Uri,
    page: Page<T>,
) -> (axum::http::HeaderMap, axum::Json<Vec<T>>) {
    (
        next_page_headers(uri, page.next.as_deref()),
        axum::Json(page.items),
    )
}

/// The JSON API's routes, relative to `/api/v1`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/me", get(users::me))
        .route("/me/access", get(access::mine))
        .route("/me/default-profile", put(profiles::set_default))
        .route("/me/workspace", get(workspace::mine))
        .route("/workspace/check", post(workspace::check))
        .route(
            "/workspace/chunks/{hash}",
            get(workspace::get_chunk)
                .put(workspace::put_chunk)
                .layer(DefaultBodyLimit::max(workspace::MAX_CHUNK_BYTES)),
        )
        .route(
            "/workspace/snapshots",
            post(workspace::commit).layer(DefaultBodyLimit::max(workspace::MAX_MANIFEST_BYTES)),
        )
        .route("/workspace/latest", get(workspace::latest))
        .route("/workspace/failed", post(workspace::failed))
        .route("/profiles", get(profiles::list).post(profiles::create))
        .route(
            "/profiles/{id}",
            get(profiles::show)
                .put(profiles::update)
                .delete(profiles::remove),
        )
        .route("/me/ssh-keys", post(access::add_key))
        .route("/me/ssh-keys/{id}", delete(access::remove_key))
        .route("/admin/users/{id}/login", put(access::set_login))
        .route("/admin/nodes/{id}/policy", put(access::set_policy))
        .route("/reservations/{id}/keep-running", put(access::keep_running))
        .route("/reservations/{id}/access", get(access::reservation))
        .route("/reservations/{id}/still-using", post(reclaim::still_using))
        .route("/incidents", get(incidents::list).post(incidents::open))
        .route("/incidents/{id}", get(incidents::show))
        .route("/incidents/{id}/export.json", get(incidents::export_json))
        .route("/incidents/{id}/steps", post(incidents::step))
        .route("/incidents/{id}/replies", post(incidents::reply))
        .route("/watches", get(watches::list).post(watches::create))
        .route("/watches/{id}", get(watches::show).delete(watches::cancel))
        .route("/watches/{id}/book", post(watches::book))
        .route(
            "/admin/idle-policy",
            get(reclaim::show).put(reclaim::set).delete(reclaim::clear),
        )
        .route("/gpus/{id}/access-events", get(access::gpu_events))
        .route("/users", get(users::list_users))
        .route("/gpus", get(reservations::list_gpus))
        .route("/availability", get(reservations::availability))
        .route("/slots", get(reservations::slots))
        .route(
            "/reservations",
            get(reservations::list).post(reservations::create),
        )
        .route(
            "/reservations/{id}",
            get(reservations::one).delete(reservations::cancel),
        )
        .route(
            "/reservations/{id}/calendar.ics",
            get(crate::calendar::reservation_file),
        )
        .route(
            "/maintenance",
            get(maintenance::list).post(maintenance::create),
        )
        .route("/maintenance/{id}", delete(maintenance::end))
        .route("/wallet", get(ledger::wallet))
        .route("/cards", get(cards::list).post(cards::save))
        .route("/cards/setup", post(cards::setup))
        .route("/cards/{id}", delete(cards::remove))
        .route("/top-ups", post(cards::top_up))
        .route("/payments", get(cards::payments))
        .route("/payments/{id}", get(cards::payment))
        .route("/refunds", get(cards::refunds))
        .route(
            "/reservations/{id}/card-payment",
            get(cards::booking_payment).post(cards::pay_booking),
        )
        .route("/stripe/webhook", post(cards::webhook))
        .route("/reports/usage", get(reports::usage))
        .route("/reports/fleet", get(reports::fleet))
        .route("/admin/credits", post(ledger::change_credits))
        .route("/admin/payments-due", get(ledger::payments_due))
        .route("/admin/gpus/{id}/retire", post(maintenance::retire))
        .route("/admin/gpus/pending", get(fleet::pending_gpus))
        .route("/admin/gpus/{id}/accept", post(fleet::accept_gpu))
        .route("/admin/gpus/{id}", patch(fleet::update_gpu))
        .route("/admin/models/{model}/price", put(fleet::set_model_price))
        .route("/admin/teams", post(teams::create))
        .route("/admin/audit", get(teams::audit))
        .route("/teams", get(teams::list))
        .route("/teams/{id}", get(teams::show))
        .route("/teams/{id}/invitations", post(teams::invite))
        .route(
            "/teams/{id}/invitations/{invitation}",
            delete(teams::revoke),
        )
        .route(
            "/teams/{id}/members/{user}",
            patch(teams::set_role).delete(teams::remove),
        )
        .route("/teams/{id}/audit", get(teams::team_audit))
        .route("/teams/{id}/budget", put(teams::set_budget))
        .route(
            "/teams/{id}/rules",
            get(quotas::show).put(quotas::set_rules),
        )
        .route(
            "/teams/{id}/quotas/{model}",
            put(quotas::set_quota).delete(quotas::remove_quota),
        )
        .route("/teams/{id}/approvals/{reservation}", post(quotas::decide))
        .route("/gpus/{id}/telemetry", get(telemetry::history))
        .route("/gpus/{id}/events", get(telemetry::events))
        .route(
            "/agent/register",
            post(agent::register).layer(DefaultBodyLimit::max(agent::MAX_BODY_BYTES)),
        )
        .route("/agent/leases", get(agent::leases))
        .route(
            "/agent/report",
            post(agent::report).layer(DefaultBodyLimit::max(agent::MAX_BODY_BYTES)),
        )
        .fallback(no_such_endpoint)
}

/// A path under `/api/v1` that names no endpoint: a JSON 404 like the API's other errors, not
/// the pages' HTML.
async fn no_such_endpoint() -> AppError {
    AppError::NotFound("no such API endpoint".into())
}
