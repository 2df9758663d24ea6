//! The plain forms that some pages post to, so that they work without JavaScript; each redirects
//! back to its page. (Most pages change data through server functions instead; these are to
//! become server functions too.)

pub mod fleet;
pub mod ledger;
pub mod reservations;
pub mod teams;
