use redlease::distributed_lock;

#[derive(Debug)]
struct AppError;

impl From<redlease::Error> for AppError {
    fn from(_: redlease::Error) -> Self {
        AppError
    }
}

#[distributed_lock(key = "a", timeout = "15s")]
async fn unknown_option() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "b", wait = "1s", wait = "2s")]
async fn duplicate_option() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock]
async fn no_options() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(wait = "1s", lease = "10s")]
async fn no_key() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key "c")]
async fn not_an_option() -> Result<(), AppError> {
    Ok(())
}

/// Every mistake in one list is reported, not only the first.
#[distributed_lock(key = "d:{nope}", wait = "soon", retries = 3)]
async fn several() -> Result<(), AppError> {
    Ok(())
}

fn main() {}
