//! One retry policy for every write the database may refuse only for now: a serialization
//! failure or deadlock on PostgreSQL, a busy SQLite, or a concurrent request with the same
//! idempotency key that committed first. Booking, posting credits and the payment job all retry
//! the same way: up to [`MAX_ATTEMPTS`] tries, waiting a little longer after each.

use sea_orm::DbErr;

/// Tries in all, the first included.
pub const MAX_ATTEMPTS: u32 = 5;

/// Whether `err` is worth another try of the whole transaction.
pub fn is_retryable(err: &DbErr) -> bool {
    let text = err.to_string();
    [
        "40001",
        "40P01",
        "could not serialize",
        "deadlock",
        "database is locked",
        "SQLITE_BUSY",
        // A concurrent request with the same idempotency key committed first.
        "uq_idempotency_keys_user_key",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

/// Whether try number `attempt` (from 1), which failed with `err`, is followed by another.
pub fn again(attempt: u32, err: &DbErr) -> bool {
    attempt < MAX_ATTEMPTS && is_retryable(err)
}

/// The wait after failed try number `attempt`.
pub async fn pause(attempt: u32) {
    tokio::time::sleep(std::time::Duration::from_millis(10 * u64::from(attempt))).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_passing_conflicts_are_retried_and_only_so_often() {
        let busy = DbErr::Custom("database is locked".into());
        let serialization = DbErr::Custom("error 40001: could not serialize access".into());
        let missing = DbErr::RecordNotFound("reservation".into());
        assert!(again(1, &busy));
        assert!(again(MAX_ATTEMPTS - 1, &serialization));
        assert!(!again(MAX_ATTEMPTS, &busy));
        assert!(!again(1, &missing));
    }
}
