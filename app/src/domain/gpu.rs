//! What a GPU is, as far as booking is concerned: its lifecycle status and memory size.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where a GPU is in its life. Only `Active` GPUs can be booked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ssr", derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum))]
#[cfg_attr(
    feature = "ssr",
    sea_orm(rs_type = "String", db_type = "Text", rename_all = "snake_case")
)]
pub enum GpuStatus {
    /// In service and bookable.
    Active,
    /// Temporarily out of service.
    Maintenance,
    /// Permanently out of service; kept for history.
    Retired,
}

impl GpuStatus {
    /// Every status, in display order.
    pub const ALL: [GpuStatus; 3] = [
        GpuStatus::Active,
        GpuStatus::Maintenance,
        GpuStatus::Retired,
    ];

    /// The value stored in the database and used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            GpuStatus::Active => "active",
            GpuStatus::Maintenance => "maintenance",
            GpuStatus::Retired => "retired",
        }
    }

    /// Whether reservations may be made on a GPU in this status.
    pub fn is_bookable(self) -> bool {
        self == GpuStatus::Active
    }
}

impl fmt::Display for GpuStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status string that is not one of `active`, `maintenance`, `retired`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown GPU status `{0}` (expected active, maintenance or retired)")]
pub struct UnknownGpuStatus(pub String);

impl FromStr for GpuStatus {
    type Err = UnknownGpuStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GpuStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownGpuStatus(s.to_owned()))
    }
}

/// GPU memory, kept in MiB as NVML reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GpuMemory(u64);

impl GpuMemory {
    /// Memory of `mib` mebibytes.
    pub const fn from_mib(mib: u64) -> Self {
        Self(mib)
    }

    /// Memory of `gib` gibibytes.
    pub const fn from_gib(gib: u64) -> Self {
        Self(gib * 1024)
    }

    /// Size in MiB.
    pub const fn mib(self) -> u64 {
        self.0
    }

    /// Size in whole gigabytes as vendors label cards ("80 GB" for an H100 reporting 81 559 MiB):
    /// MiB / 1024, rounded to the nearest whole number.
    pub const fn marketing_gb(self) -> u64 {
        (self.0 + 512) / 1024
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_through_their_stored_names() {
        for status in GpuStatus::ALL {
            assert_eq!(status.as_str().parse::<GpuStatus>(), Ok(status));
        }
        assert!("broken".parse::<GpuStatus>().is_err());
    }

    #[test]
    fn only_active_gpus_are_bookable() {
        assert!(GpuStatus::Active.is_bookable());
        assert!(!GpuStatus::Maintenance.is_bookable());
        assert!(!GpuStatus::Retired.is_bookable());
    }

    #[test]
    fn memory_shows_as_the_vendor_label() {
        assert_eq!(GpuMemory::from_mib(81_559).marketing_gb(), 80);
        assert_eq!(GpuMemory::from_mib(40_960).marketing_gb(), 40);
        assert_eq!(GpuMemory::from_mib(24_564).marketing_gb(), 24);
        assert_eq!(GpuMemory::from_gib(48).mib(), 49_152);
    }
}
