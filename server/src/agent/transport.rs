//! How an agent's reports reach the portal: over HTTP with a node token (`berth agent`), or by
//! calling the telemetry service directly (the agent inside `berth serve`).

use async_trait::async_trait;
use berth_app::backend::state::TelemetrySettings;
use berth_app::backend::telemetry;
use berth_app::domain::lease::NodeSchedule;
use berth_app::domain::telemetry::{Registration, Report};
use berth_app::error::AppError;
use sea_orm::DatabaseConnection;
use std::time::Duration;

/// Why a push did not land.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The portal could not be reached or failed (retried with backoff; nothing is lost).
    #[error("portal unreachable: {0}")]
    Unreachable(String),
    /// The portal refused the token (401/403).
    #[error("the portal refused the node token: {0}")]
    Unauthorized(String),
    /// The portal refused the content (4xx): retrying would not help.
    #[error("the portal refused the report: {0}")]
    Rejected(String),
}

/// Delivers registrations and reports.
#[async_trait]
pub trait Transport: Send + Sync {
    /// Sends the host's inventory.
    async fn register(&self, registration: &Registration) -> Result<(), PushError>;
    /// Sends samples and events.
    async fn report(&self, report: &Report) -> Result<(), PushError>;
    /// The node's lease schedule, once it differs from version `after` (or after `wait`).
    async fn leases(&self, after: Option<&str>, wait: Duration) -> Result<NodeSchedule, PushError> {
        let _ = (after, wait);
        Err(PushError::Rejected(
            "this transport has no lease schedule".into(),
        ))
    }
}

/// `POST {portal}/api/v1/agent/…` with `Authorization: Bearer <node token>`.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: reqwest::Client,
    base: String,
    token: String,
}

impl HttpTransport {
    /// A transport to the portal at `base` (`https://berth.example.org`).
    pub fn new(base: &str, token: &str) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("berth-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| err.to_string())?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
        })
    }

    async fn post<T: serde::Serialize + Sync>(
        &self,
        path: &str,
        body: &T,
    ) -> Result<(), PushError> {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .map_err(|err| PushError::Unreachable(err.to_string()))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let text = response.text().await.unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("message").and_then(|m| m.as_str().map(str::to_owned)))
            .unwrap_or(text);
        let detail = format!("{status}: {message}");
        Err(match status.as_u16() {
            401 | 403 => PushError::Unauthorized(detail),
            408 | 429 => PushError::Unreachable(detail),
            400..=499 => PushError::Rejected(detail),
            _ => PushError::Unreachable(detail),
        })
    }
}

#[async_trait]
impl Transport for HttpTransport {
    async fn register(&self, registration: &Registration) -> Result<(), PushError> {
        self.post("/api/v1/agent/register", registration).await
    }

    async fn report(&self, report: &Report) -> Result<(), PushError> {
        self.post("/api/v1/agent/report", report).await
    }

    async fn leases(&self, after: Option<&str>, wait: Duration) -> Result<NodeSchedule, PushError> {
        let mut query: Vec<(&str, String)> = vec![("wait", wait.as_secs().to_string())];
        if let Some(after) = after {
            query.push(("after", after.to_owned()));
        }
        let response = self
            .client
            .get(format!("{}/api/v1/agent/leases", self.base))
            .bearer_auth(&self.token)
            .query(&query)
            .timeout(wait + Duration::from_secs(15))
            .send()
            .await
            .map_err(|err| PushError::Unreachable(err.to_string()))?;
        let status = response.status();
        if status.is_success() {
            return response
                .json()
                .await
                .map_err(|err| PushError::Unreachable(err.to_string()));
        }
        let detail = format!("{status}: {}", response.text().await.unwrap_or_default());
        Err(match status.as_u16() {
            401 | 403 => PushError::Unauthorized(detail),
            400..=499 if status.as_u16() != 408 && status.as_u16() != 429 => {
                PushError::Rejected(detail)
            }
            _ => PushError::Unreachable(detail),
        })
    }
}

/// Calls the service directly for one node (no token: the portal trusts itself).
#[derive(Debug, Clone)]
pub struct LocalTransport {
    /// The database.
    pub db: DatabaseConnection,
    /// Retention settings.
    pub settings: TelemetrySettings,
    /// The node reported for.
    pub node_id: i64,
    /// Whether to sync the inventory on registration (a real host) or only record the source
    /// (a demo node, whose GPUs are the demo fleet's).
    pub sync_inventory: bool,
}

fn local_error(err: AppError) -> PushError {
    match err {
        AppError::Validation { .. } => PushError::Rejected(err.to_string()),
        AppError::Unauthorized | AppError::Forbidden => PushError::Unauthorized(err.to_string()),
        other => PushError::Unreachable(other.to_string()),
    }
}

#[async_trait]
impl Transport for LocalTransport {
    async fn register(&self, registration: &Registration) -> Result<(), PushError> {
        let now = chrono::Utc::now();
        if self.sync_inventory {
            telemetry::register(&self.db, &self.settings, self.node_id, registration, now)
                .await
                .map(|_| ())
                .map_err(local_error)
        } else {
            telemetry::note_agent(&self.db, self.node_id, registration, now)
                .await
                .map_err(local_error)
        }
    }

    async fn report(&self, report: &Report) -> Result<(), PushError> {
        telemetry::report(
            &self.db,
            &self.settings,
            self.node_id,
            report,
            chrono::Utc::now(),
        )
        .await
        .map(|_| ())
        .map_err(local_error)
    }
}
