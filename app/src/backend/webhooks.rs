//! Webhooks: a user's (or a team's) URL that receives their notices as JSON, signed with
//! HMAC-SHA256 under a secret shown once, with a Slack-compatible `text` field. Calls go through
//! [`WebhookClient`]: no redirects, a short timeout, and no private or local addresses unless the
//! portal allows them (`webhook_allow_private`).

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::entity::{notification_event, webhook};
use crate::backend::state::AppState;
use crate::backend::team_access;
use crate::domain::notify::{CreatedWebhook, Notice, ReservationBrief, WebhookInfo};
use crate::domain::problem::Problem;
use crate::domain::team::TeamRole;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;
use std::net::{IpAddr, SocketAddr};

/// The header that carries a call's signature: `sha256=<hex HMAC-SHA256 of the body>`.
pub const SIGNATURE_HEADER: &str = "x-berth-signature";

/// Webhooks one user may have.
pub const MAX_WEBHOOKS: usize = 10;

/// Posts webhook calls.
#[derive(Debug, Clone)]
pub struct WebhookClient {
    client: reqwest::Client,
    allow_private: bool,
}

impl WebhookClient {
    /// A client that refuses private and local addresses unless `allow_private`.
    pub fn new(allow_private: bool) -> Result<Self, String> {
        let mut builder = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("Berth/", env!("CARGO_PKG_VERSION")));
        if !allow_private {
            builder = builder.dns_resolver(std::sync::Arc::new(PublicOnly));
        }
        Ok(Self {
            client: builder.build().map_err(|err| err.to_string())?,
            allow_private,
        })
    }

    /// Whether `raw` is an address this client calls: http(s), and a public host unless private
    /// ones are allowed (names are checked again when resolved).
    pub fn check_url(&self, raw: &str) -> Result<url::Url, AppError> {
        let refuse = || {
            AppError::invalid(
                "url",
                Problem::BadWebhookUrl {
                    raw: raw.chars().take(200).collect(),
                },
            )
        };
        let url = url::Url::parse(raw.trim()).map_err(|_| refuse())?;
        if !matches!(url.scheme(), "http" | "https") || raw.len() > 2048 {
            return Err(refuse());
        }
        let private = match url.host() {
            None => return Err(refuse()),
            Some(url::Host::Ipv4(ip)) => refused(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => refused(IpAddr::V6(ip)),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        };
        if private && !self.allow_private {
            return Err(refuse());
        }
        Ok(url)
    }

    /// Posts `body` to `url`, signed with `secret`; `Err((permanent, reason))` when it did not
    /// arrive (a 4xx other than 408 and 429 is for good).
    pub async fn post(
        &self,
        url: &str,
        secret: &str,
        event: &str,
        delivery_id: i64,
        body: Vec<u8>,
    ) -> Result<(), (bool, String)> {
        let url = self
            .check_url(url)
            .map_err(|_| (true, "the address is not allowed".to_owned()))?;
        let response = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(SIGNATURE_HEADER, signature(secret, &body))
            .header("x-berth-event", event)
            .header("x-berth-delivery", delivery_id.to_string())
            .body(body)
            .send()
            .await
            .map_err(|err| (false, err.to_string()))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let permanent = status.is_client_error()
            && status != reqwest::StatusCode::REQUEST_TIMEOUT
            && status != reqwest::StatusCode::TOO_MANY_REQUESTS;
        Err((permanent, format!("HTTP {status}")))
    }
}

/// `sha256=` and the hex HMAC-SHA256 of `body` under `secret`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256={hex}")
}

/// Whether a call must not go to `ip` (loopback, private, link-local, unspecified, multicast,
/// carrier-grade NAT, unique-local).
fn refused(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unique_local()
                || v6.is_unicast_link_local()
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| refused(IpAddr::V4(v4)))
        }
    }
}

/// Resolves names to their public addresses only, so a name cannot lead a call inside.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0))
                .await?
                .filter(|addr| !refused(addr.ip()))
                .collect();
            if found.is_empty() {
                return Err("the name resolves only to private or local addresses".into());
            }
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// What a webhook receives.
#[derive(Debug, Serialize)]
pub struct Payload<'a> {
    /// The kind (`booking_confirmed`).
    pub event: &'a str,
    /// The event's id (the same in every retry).
    pub id: i64,
    /// When it happened.
    pub occurred_at: DateTime<Utc>,
    /// The reservation it is about.
    pub reservation: Option<&'a ReservationBrief>,
    /// Money moved (minor units).
    pub amount_minor: Option<i64>,
    /// A deadline.
    pub until: Option<DateTime<Utc>>,
    /// The notice in words, in its owner's language (Slack shows this field).
    pub text: String,
    /// Where to see it in Berth.
    pub url: Option<String>,
}

/// The body a call for `event` carries, its words in the owner's language.
pub fn body(
    state: &AppState,
    event: &notification_event::Model,
    notice: &Notice,
    owner: &crate::backend::entity::user::Model,
    now: DateTime<Utc>,
) -> Vec<u8> {
    let zone = crate::backend::viewer::zone_named(owner.time_zone.as_deref(), now, now);
    let text = state.words.line(
        owner.locale.as_deref(),
        event.kind,
        notice,
        &zone,
        &state.portal.currency,
    );
    let payload = Payload {
        event: event.kind.as_str(),
        id: event.id,
        occurred_at: event.occurred_at,
        reservation: notice.reservation.as_ref(),
        amount_minor: notice.amount_minor,
        until: notice.until,
        text,
        url: state
            .portal
            .public_url
            .as_ref()
            .map(|base| format!("{base}/inbox")),
    };
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// The actor's webhooks, and those of the teams they are an admin of (made by any of its
/// admins: each of them sees and may remove the team's hooks).
pub async fn list(state: &AppState, actor: &Actor) -> Result<Vec<WebhookInfo>, AppError> {
    let memberships = actor.memberships(&state.db).await?;
    let managed: Vec<i64> = memberships
        .iter()
        .filter(|m| m.role == TeamRole::Admin)
        .map(|m| m.team_id)
        .collect();
    let rows = db::webhooks::of_user_and_teams(&state.db, actor.user.id, &managed).await?;
    let mut makers: Vec<i64> = rows
        .iter()
        .map(|row| row.user_id)
        .filter(|&maker| maker != actor.user.id)
        .collect();
    makers.sort_unstable();
    makers.dedup();
    let names = db::users::names_of(&state.db, &makers).await?;
    let mut hooks = Vec::with_capacity(rows.len());
    for row in rows {
        // The team's name from the actor's memberships; read only for a team they are not in
        // (a platform admin's hook).
        let team = match row.team_id {
            Some(id) => match memberships.iter().find(|m| m.team_id == id) {
                Some(m) => Some((id, m.team_name.clone())),
                None => db::teams::team_name(&state.db, id).await?.map(|n| (id, n)),
            },
            None => None,
        };
        let maker = (row.user_id != actor.user.id)
            .then(|| names.get(&row.user_id).cloned().unwrap_or_default());
        hooks.push(info(row, team, maker));
    }
    Ok(hooks)
}

fn info(row: webhook::Model, team: Option<(i64, String)>, maker: Option<String>) -> WebhookInfo {
    WebhookInfo {
        id: row.id,
        url: row.url,
        team,
        maker,
        active: row.active,
        failures: u32::try_from(row.failures).unwrap_or(0),
        last_error: row.last_error,
        disabled_at: row.disabled_at,
        created_at: row.created_at,
    }
}

/// Adds a webhook at `url` for the actor's notices, or for team `team_id`'s when they manage
/// it; answers its secret, shown this once.
pub async fn create(
    state: &AppState,
    actor: &Actor,
    url: &str,
    team_id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<CreatedWebhook, AppError> {
    let url = state.webhooks.check_url(url)?;
    if let Some(team) = team_id {
        team_access::require_manage(&state.db, actor, team).await?;
    }
    if db::webhooks::of_user(&state.db, actor.user.id).await?.len() >= MAX_WEBHOOKS {
        return Err(AppError::invalid(
            "url",
            Problem::TooMany { max: MAX_WEBHOOKS },
        ));
    }
    let (secret, _) = crate::backend::auth::tokens::generate();
    let row = db::webhooks::insert(
        &state.db,
        actor.user.id,
        team_id,
        url.as_str(),
        &secret,
        now,
    )
    .await?;
    Ok(CreatedWebhook { id: row.id, secret })
}

/// Removes webhook `id`: the actor's own, or one of a team's notices they manage (another's is
/// not found).
pub async fn delete(state: &AppState, actor: &Actor, id: i64) -> Result<(), AppError> {
    let not_found = || AppError::NotFound(format!("webhook {id}"));
    let row = db::webhooks::row(&state.db, id)
        .await?
        .ok_or_else(not_found)?;
    if row.user_id != actor.user.id {
        let team = row.team_id.ok_or_else(not_found)?;
        match team_access::require_manage(&state.db, actor, team).await {
            Ok(()) => {}
            Err(AppError::Forbidden | AppError::NotFound(_)) => return Err(not_found()),
            Err(other) => return Err(other),
        }
    }
    if db::webhooks::delete(&state.db, id).await? {
        tracing::info!(webhook.id = id, team.id = row.team_id, "webhook removed");
        Ok(())
    } else {
        Err(not_found())
    }
}
