use redlease::distributed_lock;

#[derive(Debug)]
struct AppError;

impl From<redlease::Error> for AppError {
    fn from(_: redlease::Error) -> Self {
        AppError
    }
}

#[distributed_lock(key = "a", wait = "15")]
async fn no_unit() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "b", wait = "15sec")]
async fn unknown_unit() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "c", lease = "30s1m")]
async fn units_out_of_order() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "d", lease = "0ms")]
async fn zero_lease() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "e", wait = 15)]
async fn not_a_string() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "f", lease = "1000000h")]
async fn lease_too_long() -> Result<(), AppError> {
    Ok(())
}

fn main() {}
