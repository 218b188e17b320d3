use redlease::distributed_lock;

/// An error type that cannot carry a lock error.
#[derive(Debug)]
struct AppError;

#[distributed_lock(key = "receipt:{bill_id}")]
async fn issue_receipt(bill_id: u64) -> Result<u64, AppError> {
    Ok(bill_id)
}

fn main() {}
