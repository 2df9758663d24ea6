//! What operators and their tools call: health checks for load balancers and Prometheus metrics.

pub mod health;
pub mod metrics;
