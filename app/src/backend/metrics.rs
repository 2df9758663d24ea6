//! The portal's own metrics: requests, background jobs and stored GPU samples. One set per
//! application, held in [`AppState`](crate::backend::state::AppState) (so the tests' many portals
//! in one process count apart); `GET /metrics` registers them beside the GPU gauges it reads
//! from the database at each scrape.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

/// Jobs are told apart by `task`: Prometheus gives every series of a scrape its own `job` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    task: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobName {
    task: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// The portal's own metrics.
#[derive(Debug)]
pub struct PortalMetrics {
    requests: Family<RequestLabels, Counter>,
    request_seconds: HistogramFamily<RouteLabels>,
    job_runs: Family<JobLabels, Counter>,
    job_seconds: HistogramFamily<JobName>,
    job_last_ok: Family<JobName, Gauge<f64, AtomicU64>>,
    samples: Counter,
}

impl Default for PortalMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            request_seconds: Family::new_with_constructor(latency_histogram),
            job_runs: Family::default(),
            job_seconds: Family::new_with_constructor(latency_histogram),
            job_last_ok: Family::default(),
            samples: Counter::default(),
        }
    }
}

impl PortalMetrics {
    /// Counts one answered request (`method` one of the standard methods or `other`, `route` the
    /// matched route pattern, never the raw path) and its time.
    pub fn request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
        self.request_seconds
            .get_or_create(&RouteLabels {
                method: method.to_owned(),
                route: route.to_owned(),
            })
            .observe(seconds);
    }

    /// Records one run of a background job; a successful one also sets the job's last-success
    /// time (wall clock), from which alerts read how far a job lags.
    pub fn job_run(&self, job: &str, ok: bool, seconds: f64) {
        if ok {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |since| since.as_secs_f64());
            self.job_last_ok
                .get_or_create(&JobName {
                    task: job.to_owned(),
                })
                .set(now);
        }
        self.job_runs
            .get_or_create(&JobLabels {
                task: job.to_owned(),
                outcome: if ok { "ok" } else { "error" }.to_owned(),
            })
            .inc();
        self.job_seconds
            .get_or_create(&JobName {
                task: job.to_owned(),
            })
            .observe(seconds);
    }

    /// Counts samples stored from agents.
    pub fn samples_ingested(&self, count: u64) {
        self.samples.inc_by(count);
    }

    /// Adds these metrics to a scrape's `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "berth_http_requests",
            "HTTP requests by method, route and status",
            self.requests.clone(),
        );
        registry.register(
            "berth_http_request_duration_seconds",
            "HTTP request latency by method and route",
            self.request_seconds.clone(),
        );
        registry.register(
            "berth_job_runs",
            "Background job runs by job and outcome",
            self.job_runs.clone(),
        );
        registry.register(
            "berth_job_duration_seconds",
            "Background job run time",
            self.job_seconds.clone(),
        );
        registry.register(
            "berth_job_last_success_timestamp_seconds",
            "When the job last ran without error on this portal (Unix time)",
            self.job_last_ok.clone(),
        );
        registry.register(
            "berth_telemetry_samples_ingested",
            "GPU samples stored from node agents",
            self.samples.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(metrics: &PortalMetrics) -> String {
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn each_portal_counts_its_own() {
        let (one, other) = (PortalMetrics::default(), PortalMetrics::default());
        one.request("GET", "/calendar", 200, 0.01);
        one.job_run("payments", true, 0.2);
        one.samples_ingested(8);
        let text = scrape(&one);
        assert!(
            text.contains(
                r#"berth_http_requests_total{method="GET",route="/calendar",status="200"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains(r#"berth_job_runs_total{task="payments",outcome="ok"} 1"#));
        assert!(text.contains("berth_telemetry_samples_ingested_total 8"));
        let last_ok: f64 = text
            .lines()
            .find_map(|line| {
                line.strip_prefix(r#"berth_job_last_success_timestamp_seconds{task="payments"} "#)
            })
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no last success in {text}"));
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!((now - 60.0..=now).contains(&last_ok), "{last_ok} vs {now}");
        one.job_run("mail", false, 0.1);
        assert!(
            !scrape(&one).contains(r#"berth_job_last_success_timestamp_seconds{task="mail"}"#),
            "a failed run is no success"
        );
        assert!(!scrape(&other).contains("route=\"/calendar\""));
    }
}
