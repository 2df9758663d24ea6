//! Parts of the GPU inventory page.

mod fleet_summary;
mod model_filter;
mod node_card;

pub use fleet_summary::FleetSummary;
pub use model_filter::ModelFilter;
pub use node_card::NodeCard;
