//! Who is making a request: OpenID Connect sign-in, API tokens and the [`actor::Actor`]
//! extractor.

pub mod actor;
pub mod oidc;
pub mod tokens;
