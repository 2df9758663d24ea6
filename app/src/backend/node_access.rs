//! Node access: the login Berth uses for each user on the nodes, users' SSH keys, each node's
//! schedule for its agent (long-polled), node intruder policies, and a holder's choice to keep
//! running past the end.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::state::AppState;
use crate::domain::lease::{
    self, HORIZON_HOURS, IntruderPolicy, Lease, LeaseEnvironment, LeaseGpu, LeaseGpuView,
    LeaseNotice, LeaseState, LeaseWorkspace, NodeAccess, NodeAdmin, NodePolicy, NodeSchedule,
    ReservationAccess, SshKeyInfo,
};
use crate::domain::problem::Problem;
use crate::domain::telemetry::{AccessKind, GpuAccessEvent};
use crate::error::AppError;
use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::{ConnectionTrait, SqlErr};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::Duration;

/// Most keys one user may keep.
pub const MAX_KEYS: usize = 20;
/// Most characters of a key's name.
pub const KEY_NAME_MAX: usize = 64;
/// Smallest RSA key accepted, bits.
pub const RSA_MIN_BITS: usize = 2048;
/// Longest key line accepted, bytes (a 16384-bit RSA key is about 2,800).
const KEY_LINE_MAX: usize = 8 * 1024;
/// How often a waiting agent's schedule is read again.
const POLL_EVERY: Duration = Duration::from_secs(1);
/// Longest an agent may wait for news.
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// A key line checked and made canonical: `algorithm base64` (options and comment dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedKey {
    /// `algorithm base64`.
    pub canonical: String,
    /// `SHA256:…`.
    pub fingerprint: String,
    /// The comment it carried (a default name).
    pub comment: String,
}

/// Parses one OpenSSH public key line (what a `.pub` file holds).
pub fn parse_key(text: &str) -> Result<ParsedKey, Problem> {
    let line = text.trim();
    if line.is_empty() || line.len() > KEY_LINE_MAX || line.contains(['\n', '\r', '\0']) {
        return Err(Problem::BadSshKey);
    }
    let mut key = ssh_key::PublicKey::from_openssh(line).map_err(|_| Problem::BadSshKey)?;
    if let ssh_key::public::KeyData::Rsa(rsa) = key.key_data() {
        let bits = rsa.n.as_positive_bytes().map_or(0, |bytes| {
            let lead = bytes.first().map_or(8, |b| b.leading_zeros() as usize);
            bytes.len() * 8 - lead
        });
        if bits < RSA_MIN_BITS {
            return Err(Problem::WeakSshKey {
                bits,
                min: RSA_MIN_BITS,
            });
        }
    }
    let comment = key.comment().trim().to_owned();
    key.set_comment("");
    let canonical = key
        .to_openssh()
        .map_err(|_| Problem::BadSshKey)?
        .trim()
        .to_owned();
    let fingerprint = key.fingerprint(ssh_key::HashAlg::Sha256).to_string();
    Ok(ParsedKey {
        canonical,
        fingerprint,
        comment,
    })
}

/// `user_id`'s login, given it now (from `email`) if it has none.
pub async fn login_of(
    db: &impl ConnectionTrait,
    user_id: i64,
    current: Option<String>,
    email: &str,
) -> Result<String, AppError> {
    if let Some(login) = current {
        return Ok(login);
    }
    let base = lease::login_from_email(email);
    for n in 1..=1000u32 {
        let candidate = if n == 1 {
            base.clone()
        } else {
            lease::login_alternative(&base, n)
        };
        if db::node_access::login_taken(db, &candidate, user_id).await? {
            continue;
        }
        match db::node_access::set_first_login(db, user_id, &candidate).await {
            Ok(true) => return Ok(candidate),
            // Given meanwhile by another request: read it back.
            Ok(false) => {
                let rows = db::node_access::logins_of(db, &[user_id]).await?;
                if let Some((_, Some(login), _)) = rows.into_iter().next() {
                    return Ok(login);
                }
            }
            Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Err(AppError::Internal)
}

fn key_info(row: crate::backend::entity::ssh_key::Model) -> SshKeyInfo {
    SshKeyInfo {
        id: row.id,
        name: row.name,
        algorithm: row
            .public_key
            .split(' ')
            .next()
            .unwrap_or_default()
            .to_owned(),
        fingerprint: row.fingerprint,
        created_at: row.created_at,
    }
}

/// The actor's login and keys.
pub async fn access_of(state: &AppState, actor: &Actor) -> Result<NodeAccess, AppError> {
    let user_id = actor.user.id;
    let row = db::users::row(&state.db, user_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("user {user_id}")))?;
    let login = login_of(&state.db, user_id, row.login, &row.email).await?;
    let keys = db::node_access::keys_of(&state.db, user_id)
        .await?
        .into_iter()
        .map(key_info)
        .collect();
    Ok(NodeAccess { login, keys })
}

/// Adds a key to the actor's profile; `name` defaults to the key's comment.
pub async fn add_key(
    state: &AppState,
    actor: &Actor,
    name: &str,
    text: &str,
) -> Result<SshKeyInfo, AppError> {
    let parsed = parse_key(text).map_err(|problem| AppError::invalid("key", problem))?;
    let name = match name.trim() {
        "" if !parsed.comment.is_empty() => parsed.comment.chars().take(KEY_NAME_MAX).collect(),
        "" => parsed.fingerprint.chars().take(KEY_NAME_MAX).collect(),
        given => given.to_owned(),
    };
    if name.chars().count() > KEY_NAME_MAX || name.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "name",
            Problem::Name { max: KEY_NAME_MAX },
        ));
    }
    let keys = db::node_access::keys_of(&state.db, actor.user.id).await?;
    if keys.iter().any(|k| k.fingerprint == parsed.fingerprint) {
        return Err(AppError::invalid("key", Problem::SshKeyTwice));
    }
    if keys.len() >= MAX_KEYS {
        return Err(AppError::invalid("key", Problem::TooMany { max: MAX_KEYS }));
    }
    match db::node_access::insert_key(
        &state.db,
        actor.user.id,
        &name,
        &parsed.canonical,
        &parsed.fingerprint,
        state.now(),
    )
    .await
    {
        Ok(row) => Ok(key_info(row)),
        Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            Err(AppError::invalid("key", Problem::SshKeyTwice))
        }
        Err(err) => Err(err.into()),
    }
}

/// Removes the actor's key `id` (another user's is not found).
pub async fn remove_key(state: &AppState, actor: &Actor, id: i64) -> Result<(), AppError> {
    if db::node_access::delete_key(&state.db, actor.user.id, id).await? {
        Ok(())
    } else {
        Err(AppError::NotFound(format!("SSH key {id}")))
    }
}

/// A platform admin changes `user_id`'s login (the same on every node).
pub async fn set_login(
    state: &AppState,
    actor: &Actor,
    user_id: i64,
    raw: &str,
) -> Result<String, AppError> {
    actor.require_platform_admin()?;
    let login = lease::valid_login(raw).map_err(|problem| AppError::invalid("login", problem))?;
    if db::users::row(&state.db, user_id).await?.is_none() {
        return Err(AppError::NotFound(format!("user {user_id}")));
    }
    let taken = || AppError::invalid("login", Problem::LoginTaken { raw: login.clone() });
    if db::node_access::login_taken(&state.db, &login, user_id).await? {
        return Err(taken());
    }
    match db::node_access::set_login(&state.db, user_id, &login).await {
        Ok(()) => Ok(login),
        Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            Err(taken())
        }
        Err(err) => Err(err.into()),
    }
}

/// Every node's intruder policy (platform admins).
pub async fn policies(state: &AppState, actor: &Actor) -> Result<Vec<NodePolicy>, AppError> {
    actor.require_platform_admin()?;
    Ok(db::node_access::nodes(&state.db)
        .await?
        .into_iter()
        .map(|node| NodePolicy {
            node_id: node.id,
            intruders: IntruderPolicy::parse(&node.intruder_policy).unwrap_or_default(),
            protect_idle: node.protect_idle,
            name: node.name,
        })
        .collect())
}

/// A platform admin sets node `node_id`'s intruder policy.
pub async fn set_policy(
    state: &AppState,
    actor: &Actor,
    node_id: i64,
    policy: IntruderPolicy,
    protect_idle: bool,
) -> Result<(), AppError> {
    actor.require_platform_admin()?;
    if db::node_access::set_policy(&state.db, node_id, policy.as_str(), protect_idle).await? {
        Ok(())
    } else {
        Err(AppError::NotFound(format!("node {node_id}")))
    }
}

/// The holder chooses whether their processes keep running past the end of reservation `id`
/// until a following booking needs the GPU.
pub async fn set_keep_running(
    state: &AppState,
    actor: &Actor,
    id: i64,
    keep: bool,
) -> Result<(), AppError> {
    let row = db::reservations::row(&state.db, id)
        .await?
        .filter(|row| row.owner_id == actor.user.id)
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    if row.status == crate::backend::entity::reservation::Status::Cancelled {
        return Err(AppError::Conflict(Problem::AlreadyCancelled { id }));
    }
    if row.end_at <= state.now() {
        return Err(AppError::invalid("keep_running", Problem::AlreadyOver));
    }
    db::node_access::set_keep_running(&state.db, id, keep).await?;
    Ok(())
}

/// Node `node_id`'s schedule at `now`: the leases that have not ended and start within
/// [`HORIZON_HOURS`], its platform admins' keys, and its intruder policy.
pub async fn schedule(
    state: &AppState,
    node_id: i64,
    now: DateTime<Utc>,
) -> Result<NodeSchedule, AppError> {
    let node = db::node_access::node(&state.db, node_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("node {node_id}")))?;
    let rows = db::node_access::leases_on(
        &state.db,
        node_id,
        now,
        now + TimeDelta::hours(HORIZON_HOURS),
    )
    .await?;
    let admins = db::users::platform_admins(&state.db).await?;
    let mut users: Vec<i64> = rows.iter().map(|r| r.reservation.owner_id).collect();
    users.extend(&admins);
    users.sort_unstable();
    users.dedup();
    let mut logins: HashMap<i64, String> = HashMap::new();
    for (id, login, email) in db::node_access::logins_of(&state.db, &users).await? {
        logins.insert(id, login_of(&state.db, id, login, &email).await?);
    }
    let mut keys: HashMap<i64, Vec<String>> = HashMap::new();
    for key in db::node_access::keys_of_users(&state.db, &users).await? {
        keys.entry(key.user_id).or_default().push(key.public_key);
    }
    let versions: Vec<i64> = rows
        .iter()
        .filter_map(|r| r.reservation.profile_version_id)
        .collect();
    let specs = crate::backend::env_profiles::specs(&state.db, &versions).await?;
    let holders: Vec<(i64, i64)> = rows
        .iter()
        .map(|r| (r.reservation.id, r.reservation.owner_id))
        .collect();
    let tokens = crate::backend::workspaces::tokens_for(state, &holders).await?;
    let mut notices = terminal_notices(
        state,
        rows.iter().map(|row| &row.reservation).collect(),
        now,
    )
    .await?;
    let leases = rows
        .into_iter()
        .filter_map(|row| {
            let r = row.reservation;
            Some(Lease {
                reservation_id: r.id,
                login: logins.get(&r.owner_id)?.clone(),
                keys: keys.get(&r.owner_id).cloned().unwrap_or_default(),
                gpus: row
                    .gpus
                    .into_iter()
                    .map(|(uuid, memory)| LeaseGpu {
                        uuid,
                        memory_mib: u64::try_from(memory).unwrap_or(0),
                    })
                    .collect(),
                quarters: u8::try_from(r.quarters).unwrap_or(4),
                start: r.start_at,
                end: r.end_at,
                keep_running: r.keep_running,
                environment: r.profile_version_id.and_then(|id| {
                    let (profile, version) = specs.get(&id)?;
                    Some(LeaseEnvironment {
                        profile: profile.clone(),
                        version: version.number,
                        hash: version.hash.clone(),
                        spec: version.spec.clone(),
                    })
                }),
                workspace: tokens.get(&r.id).map(|token| LeaseWorkspace {
                    dir: state.portal.workspace.dir.clone(),
                    token: token.clone(),
                }),
                notice: notices.remove(&r.id),
            })
        })
        .collect();
    let admins = admins
        .iter()
        .filter_map(|id| {
            Some(NodeAdmin {
                login: logins.get(id)?.clone(),
                keys: keys.get(id).cloned().unwrap_or_default(),
            })
        })
        .collect();
    let mut schedule = NodeSchedule {
        version: String::new(),
        leases,
        admins,
        intruders: IntruderPolicy::parse(&node.intruder_policy).unwrap_or_default(),
        protect_idle: node.protect_idle,
        prepare_ahead_seconds: state.portal.prepare_ahead.num_seconds(),
    };
    schedule.version = version_of(&schedule);
    Ok(schedule)
}

/// What the agent writes to the terminals of the holders of `reservations` running at `now`:
/// the idle policy's latest warning about the streak they are in, in each holder's language and
/// zone, with a link to the reservation's page (where "I'm still using it" is).
async fn terminal_notices(
    state: &AppState,
    reservations: Vec<&crate::backend::entity::reservation::Model>,
    now: DateTime<Utc>,
) -> Result<HashMap<i64, LeaseNotice>, AppError> {
    use crate::domain::notify::EventKind;
    let warned: Vec<&crate::backend::entity::reservation::Model> = reservations
        .into_iter()
        .filter(|r| r.idle_warnings > 0 && r.start_at <= now && now < r.end_at)
        .collect();
    let mut notices = HashMap::new();
    if warned.is_empty() {
        return Ok(notices);
    }
    let ids: Vec<i64> = warned.iter().map(|r| r.id).collect();
    let owners: Vec<i64> = warned.iter().map(|r| r.owner_id).collect();
    let (latest, holders) = tokio::try_join!(
        db::notify::latest_about(&state.db, &ids, EventKind::IdleWarning),
        db::users::rows_of(&state.db, &owners),
    )?;
    let base = state.portal.public_url.clone().unwrap_or_default();
    for r in warned {
        let Some((key, notice)) = latest.get(&r.id) else {
            continue;
        };
        // Only a warning about the streak the booking is in now.
        if notice.idle.as_ref().map(|idle| idle.since) != r.idle_since {
            continue;
        }
        let Some(holder) = holders.get(&r.owner_id) else {
            continue;
        };
        let from = notice.idle.as_ref().map_or(now, |idle| idle.since).min(now);
        let until = notice.until.unwrap_or(r.end_at).max(now);
        let zone = crate::backend::viewer::zone_named(holder.time_zone.as_deref(), from, until);
        let text = state.words.terminal(
            holder.locale.as_deref(),
            EventKind::IdleWarning,
            notice,
            &zone,
            &state.portal.currency,
            &format!("{base}/reservations/{}", r.id),
        );
        notices.insert(
            r.id,
            LeaseNotice {
                key: key.clone(),
                text,
            },
        );
    }
    Ok(notices)
}

/// A digest of everything in a schedule but its version.
fn version_of(schedule: &NodeSchedule) -> String {
    let body = serde_json::to_vec(&(
        &schedule.leases,
        &schedule.admins,
        schedule.intruders,
        schedule.protect_idle,
        schedule.prepare_ahead_seconds,
    ))
    .unwrap_or_default();
    let digest = Sha256::digest(&body);
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// The schedule once it differs from version `after` (at once when it already does, or when
/// `after` is `None`), or as it is after `wait` (at most [`MAX_WAIT`]).
pub async fn wait_for_change(
    state: &AppState,
    node_id: i64,
    after: Option<&str>,
    wait: Duration,
) -> Result<NodeSchedule, AppError> {
    let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
    loop {
        let schedule = schedule(state, node_id, state.now()).await?;
        if after != Some(schedule.version.as_str()) || tokio::time::Instant::now() >= deadline {
            return Ok(schedule);
        }
        tokio::time::sleep(POLL_EVERY.min(deadline - tokio::time::Instant::now())).await;
    }
}

fn access_event(
    row: crate::backend::entity::gpu_access_event::Model,
    uuids: &HashMap<i64, String>,
) -> Option<GpuAccessEvent> {
    Some(GpuAccessEvent {
        gpu_id: row.gpu_id,
        uuid: uuids.get(&row.gpu_id).cloned().unwrap_or_default(),
        reservation_id: row.reservation_id,
        at: row.at,
        kind: AccessKind::parse(&row.kind)?,
        pid: row.pid,
        uid: row.uid,
        user: row.user_name,
        memory_mib: row.memory_mib,
    })
}

/// A page of what node agents did and saw on GPU `gpu_id`, newest first (platform admins).
/// `page` is the request's as parsed: a problem with it is answered only to those allowed.
pub async fn gpu_access_events(
    state: &AppState,
    actor: &Actor,
    gpu_id: i64,
    page: Result<crate::domain::paging::PageRequest, AppError>,
) -> Result<crate::domain::paging::Page<GpuAccessEvent>, AppError> {
    use crate::domain::paging::{Cursor, ListKind, Page};
    actor.require_platform_admin()?;
    let page = &page?;
    let uuid = db::node_access::gpu_uuid(&state.db, gpu_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("GPU {gpu_id}")))?;
    let uuids = HashMap::from([(gpu_id, uuid)]);
    let rows =
        db::node_access::access_events_of_gpu(&state.db, gpu_id, page.after, page.fetch()).await?;
    let page = Page::from_rows(rows, page, ListKind::AccessEvents, |row| {
        Cursor::at(row.at, row.id)
    });
    Ok(Page {
        items: page
            .items
            .into_iter()
            .filter_map(|row| access_event(row, &uuids))
            .collect(),
        next: page.next,
    })
}

/// Reservation `id` on its node, for its holder or a platform admin (others: not found).
pub async fn reservation_access(
    state: &AppState,
    actor: &Actor,
    id: i64,
    now: DateTime<Utc>,
) -> Result<ReservationAccess, AppError> {
    let is_admin = actor.require_platform_admin().is_ok();
    let row = db::reservations::row(&state.db, id)
        .await?
        .filter(|row| is_admin || row.owner_id == actor.user.id)
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    let owner = db::users::row(&state.db, row.owner_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("reservation {id}")))?;
    let login = login_of(&state.db, owner.id, owner.login, &owner.email).await?;
    let node = db::node_access::node(&state.db, row.node_id).await?;
    let enforced = node.as_ref().is_some_and(|n| !n.is_demo);
    let host = node.map(|n| n.hostname).unwrap_or_default();
    let mut uuids: HashMap<i64, String> = HashMap::new();
    let mut gpus = Vec::new();
    for (gpu_id, uuid, memory) in db::node_access::gpus_of_reservation(&state.db, id).await? {
        let live = db::telemetry::live_gpus(&state.db, Some(gpu_id))
            .await?
            .into_iter()
            .next();
        uuids.insert(gpu_id, uuid.clone());
        gpus.push(LeaseGpuView {
            gpu_id,
            uuid,
            gpu_util: live.as_ref().and_then(|l| l.readings.gpu_util),
            memory_used_mib: live.as_ref().and_then(|l| l.readings.memory_used_mib),
            memory_mib: u64::try_from(memory).unwrap_or(0),
            at: live.map(|l| l.at),
        });
    }
    let events: Vec<GpuAccessEvent> =
        db::node_access::access_events_of_reservation(&state.db, id, 200)
            .await?
            .into_iter()
            .filter_map(|row| access_event(row, &uuids))
            .collect();
    // On a demo node no agent opens anything: the window alone tells.
    // On its GPUs now (a booking moved off a failed GPU was revoked there).
    let on_now = |e: &&GpuAccessEvent| uuids.contains_key(&e.gpu_id);
    let granted = if enforced {
        events
            .iter()
            .filter(on_now)
            .any(|e| e.kind == AccessKind::Granted)
    } else {
        now >= row.start_at
    };
    let view = db::reservations::view_of(&state.db, id, now).await?;
    let revoked = enforced
        && events
            .iter()
            .filter(on_now)
            .any(|e| e.kind == AccessKind::Revoked);
    let cancelled = row.status == crate::backend::entity::reservation::Status::Cancelled;
    let policies = crate::backend::reclaim::policies(&state.db).await?;
    let running =
        !cancelled && row.released_reason.is_none() && row.start_at <= now && now < row.end_at;
    let latest: Vec<Option<f64>> = gpus.iter().map(|g| g.gpu_util.map(f64::from)).collect();
    let idle = crate::domain::reclaim::note(
        policies.for_team(row.team_id),
        running,
        crate::domain::reclaim::Told {
            since: row.idle_since,
            warnings: u32::try_from(row.idle_warnings).unwrap_or(0),
        },
        row.idle_snoozed_at
            .map_or(row.start_at, |at| at.max(row.start_at)),
        row.idle_snoozed_at.is_none() && row.owner_id == actor.user.id,
        &latest,
    );
    Ok(ReservationAccess {
        reservation_id: id,
        state: LeaseState::at(cancelled, row.start_at, row.end_at, granted, revoked, now),
        connect: format!("ssh {login}@{host}"),
        host,
        start: row.start_at,
        end: row.end_at,
        gpus,
        keep_running: row.keep_running,
        enforced,
        events,
        environment: match &view {
            Some(view) => crate::backend::env_profiles::preparation(&state.db, view).await?,
            None => None,
        },
        moved_from: view.as_ref().and_then(|v| v.moved_from),
        moved_to: view.as_ref().and_then(|v| v.moved_to),
        start_early: row.start_early,
        early_from: row.early_from,
        idle,
        still_using_at: row.idle_snoozed_at,
        reclaimed_until: row.reclaimed_until,
    })
}
