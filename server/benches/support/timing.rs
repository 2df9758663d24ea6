//! Timing helpers the benches share: sequential samples, percentiles, a report line.
#![allow(dead_code)]

use std::time::Instant;

/// Runs `request` `rounds` times one after another (after a few unmeasured ones) and returns
/// the times in milliseconds, sorted.
pub async fn sample<F, Fut>(rounds: usize, request: F) -> Vec<f64>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..5 {
        request().await;
    }
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        request().await;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    times
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

pub fn report(what: &str, sorted: &[f64], target_p50_ms: Option<f64>) {
    let p50 = percentile(sorted, 50.0);
    let verdict = match target_p50_ms {
        Some(target) if p50 <= target => format!("target p50 ≤ {target} ms: met"),
        Some(target) => format!("target p50 ≤ {target} ms: MISSED"),
        None => String::new(),
    };
    println!(
        "| {what} | p50 {p50:.2} ms | p95 {:.2} ms | max {:.2} ms | n={} | {verdict} |",
        percentile(sorted, 95.0),
        sorted.last().copied().unwrap_or(f64::NAN),
        sorted.len()
    );
}
