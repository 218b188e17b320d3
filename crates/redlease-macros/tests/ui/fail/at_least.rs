use redlease::distributed_lock;

#[derive(Debug)]
struct AppError;

impl From<redlease::Error> for AppError {
    fn from(_: redlease::Error) -> Self {
        AppError
    }
}

#[distributed_lock(key = "jobs:a", at_least = "0")]
async fn zero() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "jobs:b", mode = "read", at_least = "5s")]
async fn read_hold() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "jobs:c", at_least = 5)]
async fn not_a_string() -> Result<(), AppError> {
    Ok(())
}

fn main() {}
