use redlease::distributed_lock;

#[derive(Debug)]
struct AppError;

impl From<redlease::Error> for AppError {
    fn from(_: redlease::Error) -> Self {
        AppError
    }
}

#[distributed_lock(key = "a", mode = "shared")]
async fn unknown_mode() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "b", mode = "READ")]
async fn wrong_case() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "c", mode = write)]
async fn not_a_string() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "d", mode = "read", mode = "write")]
async fn both_modes() -> Result<(), AppError> {
    Ok(())
}

fn main() {}
