//! GPU nodes and their agents' tokens for the admin page (the command line's `berth node …`
//! uses the same service layer, `backend::telemetry`).

use crate::domain::inventory::PendingGpu;
use crate::domain::telemetry::SourceKind;
use crate::error::AppError;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// One node as the admin page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRow {
    /// Database id.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Host name its agent reported.
    pub hostname: String,
    /// Demo node (simulated by the portal itself).
    pub is_demo: bool,
    /// Where its values come from (`None`: no agent has reported).
    pub source: Option<SourceKind>,
    /// NVIDIA driver version.
    pub driver_version: Option<String>,
    /// Last report.
    pub last_seen: Option<chrono::DateTime<chrono::Utc>>,
    /// Its agent is silent.
    pub stale: bool,
    /// GPUs in the inventory (vanished ones included, pending ones not).
    pub gpus: usize,
    /// Tokens that still work.
    pub live_tokens: u64,
}

/// What the nodes page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodesPage {
    /// Every node by name.
    pub nodes: Vec<NodeRow>,
    /// GPUs agents reported that wait for acceptance, oldest first.
    pub pending: Vec<PendingGpu>,
    /// The portal's address as the browser used it, for the agent command line.
    pub portal_url: String,
}

/// The page's data (platform admins).
#[server(endpoint = "get_nodes_page")]
pub async fn get_nodes_page() -> Result<NodesPage, AppError> {
    use crate::api::context::platform_admin;
    platform_admin(|call| async move {
        let now = call.now;
        let overview = crate::backend::inventory::overview(&call.state, &call.actor).await?;
        let (agents, tokens) = (&overview.agents, &overview.live_tokens);
        let nodes = overview
            .nodes
            .into_iter()
            .map(|node| {
                let agent = agents.iter().find(|a| a.node_id == node.id);
                NodeRow {
                    source: agent.and_then(|a| a.source),
                    driver_version: agent.and_then(|a| a.driver_version.clone()),
                    last_seen: agent.and_then(|a| a.last_seen),
                    stale: agent.is_some_and(|a| {
                        a.source.is_some()
                            && crate::domain::telemetry::is_stale(
                                a.last_seen,
                                a.interval_seconds,
                                now,
                            )
                    }),
                    gpus: node.gpus.len(),
                    live_tokens: tokens.get(&node.id).copied().unwrap_or(0),
                    id: node.id,
                    name: node.name,
                    hostname: node.hostname,
                    is_demo: node.is_demo,
                }
            })
            .collect();
        let portal_url = use_context::<http::request::Parts>()
            .and_then(|parts| {
                let header = |name: &str| parts.headers.get(name)?.to_str().ok();
                // Behind a reverse proxy, the address the browser used.
                let host = header("x-forwarded-host").or_else(|| header("host"))?;
                let scheme = header("x-forwarded-proto").unwrap_or("http");
                Some(format!("{scheme}://{host}"))
            })
            .unwrap_or_else(|| "http://127.0.0.1:3000".into());
        Ok(NodesPage {
            nodes,
            pending: overview.pending,
            portal_url,
        })
    })
    .await
}

/// A node's new token, shown once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedNodeToken {
    /// The node (created if it was new).
    pub node_id: i64,
    /// Its name.
    pub name: String,
    /// The token (only its hash is stored).
    pub token: String,
}

/// Adds node `name` if it is new and issues a token for its agent (platform admins).
#[server(endpoint = "add_node_token")]
pub async fn add_node_token(name: String) -> Result<IssuedNodeToken, AppError> {
    use crate::api::context::platform_admin;
    platform_admin(|call| async move {
        let (node_id, token) = crate::backend::telemetry::issue_node_token(
            &call.state.db,
            &name,
            None,
            Some(call.actor.user.id),
            call.now,
        )
        .await?;
        tracing::info!(
            node.id = node_id,
            user.id = call.actor.user.id,
            "node token issued"
        );
        Ok(IssuedNodeToken {
            node_id,
            name: name.trim().to_owned(),
            token,
        })
    })
    .await
}

/// Accepts GPU `id`, which an agent reported, into the inventory (platform admins).
#[server(endpoint = "accept_gpu")]
pub async fn accept_gpu(id: i64) -> Result<(), AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::telemetry::accept_gpu(&call.state, &call.actor, id, call.now).await
    })
    .await
}

/// Revokes every token of node `id` (platform admins); returns how many were live.
#[server(endpoint = "revoke_node_tokens")]
pub async fn revoke_node_tokens(id: i64) -> Result<u64, AppError> {
    use crate::api::context::platform_admin;
    platform_admin(|call| async move {
        let revoked = crate::backend::telemetry::revoke_node_tokens(
            &call.state.db,
            id,
            Some(call.actor.user.id),
            call.now,
        )
        .await?;
        tracing::info!(
            node.id = id,
            user.id = call.actor.user.id,
            revoked,
            "node tokens revoked"
        );
        Ok(revoked)
    })
    .await
}
