use redlease::distributed_lock;

#[derive(Debug)]
struct AppError;

impl From<redlease::Error> for AppError {
    fn from(_: redlease::Error) -> Self {
        AppError
    }
}

#[distributed_lock(key = "receipt:{bill_id}")]
fn issue_receipt(bill_id: u64) -> Result<u64, AppError> {
    Ok(bill_id)
}

#[distributed_lock(key = "config")]
struct Config;

fn main() {
    let _ = issue_receipt(1);
    let _ = Config;
}
