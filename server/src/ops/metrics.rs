//! `GET /metrics`: Prometheus (OpenMetrics text) exposition of GPU telemetry under
//! dcgm-exporter's names, plus the portal's own request and job metrics.
//!
//! GPU values come from the database at each scrape, so every replica answers alike; the
//! portal's own counters live in the state (`backend::metrics`). GPUs of a
//! node whose agent is silent are left out (their series go absent, which alerts can watch);
//! `berth_node_up` says which nodes report.

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use berth_app::backend::state::AppState;
use berth_app::domain::schedule::WHOLE_GPU;
use berth_app::domain::telemetry::SourceKind;
use berth_app::error::AppError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::time::Instant;
use subtle::ConstantTimeEq;

/// The `method` label: one of the standard methods, or `other`, so that clients cannot add
/// series by inventing methods.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

/// Whether the `Authorization` header carries `required` as its bearer token, compared in
/// constant time so the answer's timing does not tell how much of a guess was right.
fn bearer_matches(headers: &axum::http::HeaderMap, required: &str) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or_default();
    bool::from(given.as_bytes().ct_eq(required.as_bytes()))
}

/// Middleware: counts requests by method, route and status, and times them.
pub async fn track_requests(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let response = next.run(request).await;
    state.metrics.request(
        method,
        &route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GpuLabels {
    gpu: String,
    #[prometheus(flatten)]
    ids: GpuIds,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
#[allow(non_snake_case)]
struct GpuIds {
    UUID: String,
    modelName: String,
    Hostname: String,
    node: String,
    berth_gpu_id: String,
    simulated: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeLabels {
    node: String,
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    state: String,
}

type GaugeFamily<L> = Family<L, Gauge<f64, AtomicU64>>;

/// The labels that name one GPU, as dcgm-exporter's (plus Berth's node and id). `source` is
/// what its node's agent reports from, if it reports at all.
fn gpu_ids(
    node: &berth_app::domain::inventory::NodeInventory,
    gpu: &berth_app::domain::inventory::GpuListing,
    source: Option<SourceKind>,
) -> GpuIds {
    GpuIds {
        UUID: gpu.uuid.clone(),
        modelName: gpu.model.clone(),
        Hostname: node.hostname.clone(),
        node: node.name.clone(),
        berth_gpu_id: gpu.id.to_string(),
        simulated: (source == Some(SourceKind::Simulated)).to_string(),
    }
}

/// The bearer token `/metrics` requires (`metrics_token`), if any.
#[derive(Debug, Clone, Default)]
pub struct MetricsToken(pub Option<String>);

/// `GET /metrics`.
pub async fn metrics(
    State(state): State<AppState>,
    axum::Extension(MetricsToken(required)): axum::Extension<MetricsToken>,
    headers: axum::http::HeaderMap,
) -> Result<Response, AppError> {
    if let Some(required) = required
        && !bearer_matches(&headers, &required)
    {
        return Err(AppError::Unauthorized);
    }
    let now = state.now();
    let berth_app::backend::telemetry::Scrape {
        fleet,
        nodes,
        last_xids: xids,
        reserved,
        deliveries,
        oldest_queued,
    } = berth_app::backend::telemetry::scrape(&state, now).await?;

    let mut registry = Registry::default();
    let gauges: Vec<(&str, &str, GaugeFamily<GpuLabels>)> = [
        ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)"),
        ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %)"),
        ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)"),
        ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)"),
        ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)"),
        ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)"),
        (
            "DCGM_FI_DEV_POWER_MGMT_LIMIT",
            "Enforced power limit (in W)",
        ),
        ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)"),
        (
            "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
            "Current clock throttle reasons (bit mask)",
        ),
        (
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
            "Volatile single-bit (corrected) ECC errors",
        ),
        (
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
            "Volatile double-bit (uncorrected) ECC errors",
        ),
        (
            "DCGM_FI_DEV_XID_ERRORS",
            "Value of the last XID error encountered",
        ),
    ]
    .into_iter()
    .map(|(name, help)| (name, help, GaugeFamily::<GpuLabels>::default()))
    .collect();
    let reserved_share = GaugeFamily::<GpuIds>::default();
    let node_up = GaugeFamily::<NodeLabels>::default();
    let node_age = GaugeFamily::<NodeLabels>::default();

    let live: HashMap<i64, _> = fleet.gpus.iter().map(|g| (g.gpu_id, g)).collect();
    for node in &nodes {
        let agent = fleet.nodes.iter().find(|n| n.node_id == node.id);
        // Every GPU's reserved share, reporting or not: a reservation holds whatever its agent.
        for gpu in &node.gpus {
            let quarters = reserved.get(&gpu.id).copied().unwrap_or(0);
            reserved_share
                .get_or_create(&gpu_ids(node, gpu, agent.and_then(|a| a.source)))
                .set(quarters as f64 / f64::from(WHOLE_GPU));
        }
        let Some(agent) = agent else {
            continue;
        };
        let Some(source) = agent.source else { continue };
        let labels = NodeLabels {
            node: node.name.clone(),
            source: source.as_str().to_owned(),
        };
        node_up
            .get_or_create(&labels)
            .set(if agent.stale { 0.0 } else { 1.0 });
        if let Some(seen) = agent.last_seen {
            node_age
                .get_or_create(&labels)
                .set((now - seen).num_milliseconds() as f64 / 1000.0);
        }
        if agent.stale {
            continue;
        }
        for gpu in &node.gpus {
            let Some(reading) = live.get(&gpu.id) else {
                continue;
            };
            if fleet.vanished.contains(&gpu.id) {
                continue;
            }
            let labels = GpuLabels {
                gpu: gpu.device_index.to_string(),
                ids: gpu_ids(node, gpu, Some(source)),
            };
            let r = &reading.readings;
            let total = gpu.memory.mib() as f64;
            let values = [
                r.gpu_util.map(f64::from),
                r.mem_util.map(f64::from),
                r.memory_used_mib.map(|v| v as f64),
                r.memory_used_mib.map(|v| (total - v as f64).max(0.0)),
                r.temperature_c.map(f64::from),
                r.power_mw.map(|v| f64::from(v) / 1000.0),
                r.power_limit_mw.map(|v| f64::from(v) / 1000.0),
                r.sm_clock_mhz.map(f64::from),
                r.throttle_reasons.map(|v| v as f64),
                r.ecc_corrected.map(|v| v as f64),
                r.ecc_uncorrected.map(|v| v as f64),
                Some(xids.get(&gpu.id).copied().unwrap_or(0) as f64),
            ];
            for ((_, _, family), value) in gauges.iter().zip(values) {
                if let Some(value) = value {
                    family.get_or_create(&labels).set(value);
                }
            }
        }
    }
    for (name, help, family) in gauges {
        registry.register(name, help, family);
    }
    registry.register(
        "berth_gpu_reserved_share",
        "Share of the GPU (0 to 1) that confirmed reservations hold now",
        reserved_share,
    );
    let outbox = GaugeFamily::<StatusLabel>::default();
    for (status, count) in [
        ("queued", deliveries.queued),
        ("sent", deliveries.sent),
        ("failed", deliveries.failed),
    ] {
        outbox
            .get_or_create(&StatusLabel {
                status: status.to_owned(),
            })
            .set(count as f64);
    }
    registry.register(
        "berth_outbox_deliveries",
        "Notification deliveries (e-mail, webhooks) by status",
        outbox,
    );
    let oldest = Gauge::<f64, AtomicU64>::default();
    oldest.set(oldest_queued.map_or(0.0, |at| {
        (now - at).num_milliseconds().max(0) as f64 / 1000.0
    }));
    registry.register(
        "berth_outbox_oldest_queued_age_seconds",
        "Age of the oldest notification delivery still queued (0 when none is)",
        oldest,
    );
    registry.register(
        "berth_node_up",
        "1 when the node's agent reported recently, 0 when it is silent",
        node_up,
    );
    registry.register(
        "berth_node_last_report_age_seconds",
        "Seconds since the node's agent last reported",
        node_age,
    );
    let pool = berth_app::backend::db::pool_usage(&state.db);
    let pool_max = Gauge::<i64>::default();
    pool_max.set(i64::from(pool.max));
    registry.register(
        "berth_db_pool_max_connections",
        "Most database connections this replica opens (database_max_connections)",
        pool_max,
    );
    let pool_connections = GaugeFamily::<PoolLabels>::default();
    for (use_, count) in [
        ("in_use", pool.open.saturating_sub(pool.idle)),
        ("idle", pool.idle),
    ] {
        pool_connections
            .get_or_create(&PoolLabels {
                state: use_.to_owned(),
            })
            .set(f64::from(count));
    }
    registry.register(
        "berth_db_pool_connections",
        "Open database connections of this replica, held by a request or job (in_use) or idle",
        pool_connections,
    );
    state.metrics.register(&mut registry);

    let mut text = String::new();
    encode(&mut text, &registry).map_err(|_| AppError::Internal)?;
    let mut response = (StatusCode::OK, Body::from(text)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_standard_methods_name_their_series() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::HEAD), "HEAD");
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        let invented = Method::from_bytes(b"PROPFIND-X1").unwrap();
        assert_eq!(method_label(&invented), "other");
    }

    #[test]
    fn the_metrics_token_must_match_whole() {
        let mut headers = axum::http::HeaderMap::new();
        assert!(!bearer_matches(&headers, "s3cret"));
        for (given, ok) in [
            ("Bearer s3cret", true),
            ("Bearer s3cret ", true),
            ("Bearer s3cre", false),
            ("Bearer s3cretx", false),
            ("Bearer ", false),
            ("s3cret", false),
        ] {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(given).unwrap());
            assert_eq!(bearer_matches(&headers, "s3cret"), ok, "{given}");
        }
    }
}
