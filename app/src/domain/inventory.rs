//! The GPU inventory as the portal shows it: nodes with their GPUs, filtering by model and a
//! per-model summary of the fleet.

use super::gpu::{GpuMemory, GpuStatus};
use super::money::{Currency, Money};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One GPU as listed in the inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuListing {
    /// Database id.
    pub id: i64,
    /// NVML device index on its node.
    pub device_index: u32,
    /// NVML UUID (`GPU-…`).
    pub uuid: String,
    /// Model name as NVML reports it, e.g. `NVIDIA H100 80GB HBM3`.
    pub model: String,
    /// Total memory.
    pub memory: GpuMemory,
    /// Lifecycle status.
    pub status: GpuStatus,
    /// Whether the GPU can be booked in ½ and ¼ shares.
    pub shareable: bool,
    /// Price of one whole GPU for one hour.
    pub hourly_price: Money,
}

/// A GPU an agent reported that waits for a platform admin's acceptance before it is offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingGpu {
    /// Database id.
    pub id: i64,
    /// Its node's id.
    pub node_id: i64,
    /// Its node's name.
    pub node: String,
    /// NVML UUID.
    pub uuid: String,
    /// Model name as the agent reported it.
    pub model: String,
    /// Total memory in MiB.
    pub memory_mib: i64,
    /// PCI bus id, when reported.
    pub pci_bus_id: Option<String>,
    /// When the agent first reported it.
    pub reported_at: DateTime<Utc>,
}

/// A GPU host and its GPUs, in device-index order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInventory {
    /// Database id.
    pub id: i64,
    /// Unique display name.
    pub name: String,
    /// Host name the node agent reports from.
    pub hostname: String,
    /// Sample data added by the demo fleet, not real hardware.
    pub is_demo: bool,
    /// When the node was added.
    pub created_at: DateTime<Utc>,
    /// The node's GPUs.
    pub gpus: Vec<GpuListing>,
}

/// The whole inventory with what is needed to display it, or one page of a large one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    /// Nodes ordered by name (on a page of a large fleet: that page's, already filtered).
    pub nodes: Vec<NodeInventory>,
    /// The currency prices are in.
    pub currency: Currency,
    /// Set when the fleet is larger than one page: what the page says about all of it.
    #[serde(default)]
    pub fleet: Option<FleetPage>,
}

/// How many nodes one page of the inventory shows.
pub const INVENTORY_PAGE_NODES: usize = 32;

/// One page of a fleet larger than [`INVENTORY_PAGE_NODES`] nodes, and the whole fleet's facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetPage {
    /// Every model of the fleet, sorted.
    pub models: Vec<String>,
    /// The whole fleet's per-model counts.
    pub summary: Vec<ModelSummary>,
    /// GPUs in the fleet.
    pub total: usize,
    /// GPUs matching the filter, on every page.
    pub matching: usize,
    /// Whether any node is demo data.
    pub demo: bool,
    /// The model filter applied, if any.
    pub model: Option<String>,
    /// This page, from 1.
    pub page: usize,
    /// Pages in all (at least 1).
    pub pages: usize,
}

/// Count of GPUs of one model, in total and bookable now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// Model name.
    pub model: String,
    /// Memory of that model (the largest if cards differ).
    pub memory: GpuMemory,
    /// All GPUs of the model.
    pub total: usize,
    /// Those with status `active`.
    pub active: usize,
}

impl Inventory {
    /// Total number of GPUs.
    pub fn gpu_count(&self) -> usize {
        self.nodes.iter().map(|node| node.gpus.len()).sum()
    }

    /// Whether any node is demo data.
    pub fn has_demo_data(&self) -> bool {
        self.nodes.iter().any(|node| node.is_demo)
    }

    /// Distinct model names, sorted.
    pub fn models(&self) -> Vec<String> {
        let mut models: Vec<String> = self
            .nodes
            .iter()
            .flat_map(|node| node.gpus.iter().map(|gpu| gpu.model.clone()))
            .collect();
        models.sort();
        models.dedup();
        models
    }

    /// The nodes that have GPUs of `model`, each with only those GPUs; all nodes when `model` is
    /// `None`. Nodes left without GPUs by the filter are dropped.
    pub fn filtered(&self, model: Option<&str>) -> Vec<NodeInventory> {
        let Some(model) = model else {
            return self.nodes.clone();
        };
        self.nodes
            .iter()
            .filter_map(|node| {
                let gpus: Vec<GpuListing> = node
                    .gpus
                    .iter()
                    .filter(|gpu| gpu.model == model)
                    .cloned()
                    .collect();
                (!gpus.is_empty()).then(|| NodeInventory {
                    gpus,
                    ..node.clone()
                })
            })
            .collect()
    }

    /// The inventory as one page shows it: unchanged when the fleet fits in one page; else
    /// page `page` (from 1, clamped to the last) of the nodes with GPUs of `model` (all when
    /// `None`), [`INVENTORY_PAGE_NODES`] nodes a page, with the whole fleet's facts. (The
    /// portal reads such a page from the store directly, `backend::inventory::page`; this is
    /// what it must equal.)
    pub fn page(self, model: Option<&str>, page: usize) -> Inventory {
        if self.nodes.len() <= INVENTORY_PAGE_NODES {
            return self;
        }
        let matching_nodes = self.filtered(model);
        let fleet = FleetPage::new(
            self.summary(),
            self.has_demo_data(),
            model,
            matching_nodes.len(),
            page,
        );
        Inventory {
            nodes: matching_nodes
                .into_iter()
                .skip(fleet.first_node())
                .take(INVENTORY_PAGE_NODES)
                .collect(),
            currency: self.currency,
            fleet: Some(fleet),
        }
    }

    /// Per-model counts, largest memory first, then by name.
    pub fn summary(&self) -> Vec<ModelSummary> {
        let mut by_model: BTreeMap<&str, ModelSummary> = BTreeMap::new();
        for gpu in self.nodes.iter().flat_map(|node| &node.gpus) {
            let entry = by_model.entry(&gpu.model).or_insert_with(|| ModelSummary {
                model: gpu.model.clone(),
                memory: gpu.memory,
                total: 0,
                active: 0,
            });
            entry.total += 1;
            entry.memory = entry.memory.max(gpu.memory);
            if gpu.status.is_bookable() {
                entry.active += 1;
            }
        }
        ModelSummary::ordered(by_model.into_values().collect())
    }
}

impl ModelSummary {
    /// `summary` largest memory first, then by name.
    pub fn ordered(mut summary: Vec<ModelSummary>) -> Vec<ModelSummary> {
        summary.sort_by(|a, b| b.memory.cmp(&a.memory).then_with(|| a.model.cmp(&b.model)));
        summary
    }
}

impl FleetPage {
    /// The facts of a fleet with per-model counts `summary` and (when `demo`) demo nodes, for
    /// page `page` (from 1, clamped to the last) of the `matching_nodes` nodes that have GPUs of
    /// `model` (every node when `None`).
    pub fn new(
        summary: Vec<ModelSummary>,
        demo: bool,
        model: Option<&str>,
        matching_nodes: usize,
        page: usize,
    ) -> Self {
        let summary = ModelSummary::ordered(summary);
        let pages = matching_nodes.div_ceil(INVENTORY_PAGE_NODES).max(1);
        let mut models: Vec<String> = summary.iter().map(|m| m.model.clone()).collect();
        models.sort();
        let total = summary.iter().map(|m| m.total).sum();
        let matching = match model {
            None => total,
            Some(model) => summary
                .iter()
                .filter(|m| m.model == model)
                .map(|m| m.total)
                .sum(),
        };
        FleetPage {
            models,
            summary,
            total,
            matching,
            demo,
            model: model.map(str::to_owned),
            page: page.clamp(1, pages),
            pages,
        }
    }

    /// How many matching nodes come before this page's first.
    pub fn first_node(&self) -> usize {
        (self.page - 1) * INVENTORY_PAGE_NODES
    }
}

/// A GPU host to add to the inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewNode {
    /// Unique display name.
    pub name: String,
    /// Host name.
    pub hostname: String,
    /// Sample data rather than real hardware.
    pub is_demo: bool,
}

/// A GPU to add to a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewGpu {
    /// NVML device index on the node.
    pub device_index: u32,
    /// NVML UUID.
    pub uuid: String,
    /// Model name.
    pub model: String,
    /// Total memory.
    pub memory: GpuMemory,
    /// Initial status.
    pub status: GpuStatus,
    /// Bookable in fractions.
    pub shareable: bool,
    /// Price per whole-GPU hour.
    pub hourly_price: Money,
}

/// Reads the model filter from a query-string value: blank means "all models".
pub fn parse_model_filter(raw: Option<&str>) -> Option<String> {
    raw.map(str::trim)
        .filter(|model| !model.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(index: u32, model: &str, gib: u64, status: GpuStatus) -> GpuListing {
        GpuListing {
            id: i64::from(index),
            device_index: index,
            uuid: format!("GPU-{index}"),
            model: model.to_owned(),
            memory: GpuMemory::from_gib(gib),
            status,
            shareable: false,
            hourly_price: Money::from_minor(100),
        }
    }

    fn node(name: &str, gpus: Vec<GpuListing>) -> NodeInventory {
        NodeInventory {
            id: 1,
            name: name.to_owned(),
            hostname: format!("{name}.local"),
            is_demo: false,
            created_at: DateTime::<Utc>::UNIX_EPOCH,
            gpus,
        }
    }

    fn fleet() -> Inventory {
        Inventory {
            nodes: vec![
                node(
                    "a",
                    vec![
                        gpu(0, "H100", 80, GpuStatus::Active),
                        gpu(1, "L40S", 48, GpuStatus::Maintenance),
                    ],
                ),
                node("b", vec![gpu(0, "L40S", 48, GpuStatus::Active)]),
            ],
            currency: Currency::new("USD", "$", 2).unwrap(),
            fleet: None,
        }
    }

    #[test]
    fn a_large_fleet_comes_a_page_of_nodes_at_a_time_with_the_whole_fleets_facts() {
        assert_eq!(
            fleet().page(Some("H100"), 3),
            fleet(),
            "a small fleet is one page"
        );
        // 70 nodes: 35 of H100 (two GPUs each), 35 of L40S (one each).
        let nodes = (0..70)
            .map(|n| {
                if n % 2 == 0 {
                    node(
                        &format!("n{n:02}"),
                        vec![
                            gpu(0, "H100", 80, GpuStatus::Active),
                            gpu(1, "H100", 80, GpuStatus::Active),
                        ],
                    )
                } else {
                    node(
                        &format!("n{n:02}"),
                        vec![gpu(0, "L40S", 48, GpuStatus::Active)],
                    )
                }
            })
            .collect();
        let big = Inventory { nodes, ..fleet() };
        let first = big.clone().page(None, 1);
        let facts = first.fleet.clone().unwrap();
        assert_eq!((first.nodes.len(), facts.page, facts.pages), (32, 1, 3));
        assert_eq!((facts.total, facts.matching), (105, 105));
        assert_eq!(facts.models, vec!["H100", "L40S"]);
        assert_eq!(facts.summary[0].total, 70);
        let last = big.clone().page(None, 99);
        assert_eq!(
            (last.nodes.len(), last.fleet.unwrap().page),
            (6, 3),
            "clamped to the last page"
        );
        let h100 = big.page(Some("H100"), 2);
        let facts = h100.fleet.unwrap();
        assert_eq!((h100.nodes.len(), facts.pages, facts.matching), (3, 2, 70));
        assert!(
            h100.nodes
                .iter()
                .all(|node| node.gpus.iter().all(|g| g.model == "H100"))
        );
        assert_eq!(facts.total, 105, "the fleet's facts stay whole");
    }

    #[test]
    fn models_are_distinct_and_sorted() {
        assert_eq!(fleet().models(), vec!["H100", "L40S"]);
    }

    #[test]
    fn filtering_by_model_keeps_only_matching_gpus_and_their_nodes() {
        let h100 = fleet().filtered(Some("H100"));
        assert_eq!(h100.len(), 1);
        assert_eq!(h100[0].name, "a");
        assert_eq!(h100[0].gpus.len(), 1);

        let l40s = fleet().filtered(Some("L40S"));
        assert_eq!(l40s.iter().map(|n| n.gpus.len()).sum::<usize>(), 2);

        assert!(fleet().filtered(Some("A100")).is_empty());
        assert_eq!(fleet().filtered(None), fleet().nodes);
    }

    #[test]
    fn summary_counts_bookable_gpus_per_model_largest_first() {
        let summary = fleet().summary();
        assert_eq!(summary[0].model, "H100");
        assert_eq!((summary[0].total, summary[0].active), (1, 1));
        assert_eq!(summary[1].model, "L40S");
        assert_eq!((summary[1].total, summary[1].active), (2, 1));
        assert_eq!(fleet().gpu_count(), 3);
    }

    #[test]
    fn a_blank_model_filter_means_all_models() {
        assert_eq!(parse_model_filter(None), None);
        assert_eq!(parse_model_filter(Some("  ")), None);
        assert_eq!(parse_model_filter(Some(" L40S ")), Some("L40S".to_owned()));
    }
}
