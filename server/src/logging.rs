//! Logging with `tracing`: pretty or JSON lines, filtered by `BERTH_LOG`.

use crate::configuration::{LogFormat, LogSettings};
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. Fails only if the filter is invalid (checked earlier) or a
/// subscriber is already installed.
pub fn init(settings: &LogSettings) -> Result<(), String> {
    let filter = EnvFilter::try_new(&settings.filter).map_err(|err| err.to_string())?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match settings.format {
        LogFormat::Pretty => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    result.map_err(|err| format!("cannot install the logger: {err}"))
}
