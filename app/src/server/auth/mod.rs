//! Who is making a request: API tokens and the [`actor::Actor`] extractor.

pub mod actor;
pub mod tokens;
