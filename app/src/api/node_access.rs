//! Server functions for access to the nodes: the caller's login and SSH keys, and a
//! reservation's state on its node.

use crate::domain::lease::{NodeAccess, ReservationAccess, SshKeyInfo};
use crate::domain::zone::ZoneOffsets;
use crate::error::AppError;
use leptos::prelude::*;

/// The caller's login on the nodes and SSH keys.
#[server(endpoint = "get_node_access")]
pub async fn get_node_access() -> Result<NodeAccess, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::node_access::access_of(&call.state, &call.actor).await
    })
    .await
}

/// Adds an SSH public key (`name` empty: the key's comment).
#[server(endpoint = "add_ssh_key")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all))]
pub async fn add_ssh_key(
    #[server(default)] name: String,
    key: String,
) -> Result<SshKeyInfo, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::node_access::add_key(&call.state, &call.actor, &name, &key).await
    })
    .await
}

/// Removes one of the caller's keys; another's is "not found".
#[server(endpoint = "delete_ssh_key")]
#[cfg_attr(feature = "ssr", tracing::instrument(skip_all, fields(key.id = id)))]
pub async fn delete_ssh_key(id: i64) -> Result<(), AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::node_access::remove_key(&call.state, &call.actor, id).await
    })
    .await
}

/// A reservation on its node, with the viewer's zone for its times.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReservationAccessPage {
    /// The reservation on its node.
    pub access: ReservationAccess,
    /// The viewer's zone over the reservation and its events.
    pub zone: ZoneOffsets,
}

/// Reservation `id` on its node (its holder or a platform admin).
#[server(endpoint = "get_reservation_access")]
pub async fn get_reservation_access(id: i64) -> Result<ReservationAccessPage, AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        let access =
            crate::backend::node_access::reservation_access(&call.state, &call.actor, id, call.now)
                .await?;
        let from = access.start.min(call.now) - chrono::TimeDelta::days(1);
        let to = access.end.max(call.now) + chrono::TimeDelta::days(1);
        let zone = call.zone_over(from, to);
        Ok(ReservationAccessPage { access, zone })
    })
    .await
}

/// The holder's choice: keep their processes running past the end until a following booking
/// needs the GPU (`keep` is "true" or "false").
#[server(endpoint = "set_keep_running")]
pub async fn set_keep_running(id: i64, keep: String) -> Result<(), AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::node_access::set_keep_running(&call.state, &call.actor, id, keep == "true")
            .await
    })
    .await
}

/// The holder of a running booking says its idle GPUs are still in use: the idle policy counts
/// from now (once per booking).
#[server(endpoint = "still_using")]
pub async fn still_using(id: i64) -> Result<(), AppError> {
    use crate::api::context::signed_in;
    signed_in(|call| async move {
        crate::backend::reclaim::still_using(&call.state, &call.actor, id)
            .await
            .map(drop)
    })
    .await
}
