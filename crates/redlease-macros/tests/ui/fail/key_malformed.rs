use redlease::distributed_lock;

#[derive(Debug)]
struct AppError;

impl From<redlease::Error> for AppError {
    fn from(_: redlease::Error) -> Self {
        AppError
    }
}

#[distributed_lock(key = "")]
async fn empty() -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "{tenant:{id}")]
async fn unclosed(id: u64) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "{tenant}:{id}}")]
async fn unmatched(tenant: u64, id: u64) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "orders:{}")]
async fn positional(id: u64) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "orders:{order-id}")]
async fn not_a_path(id: u64) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "orders:{id:y}")]
async fn unknown_format_trait(id: u64) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "orders:{id:1$}:{width}")]
async fn positional_width(id: u64, width: usize) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "orders:{type}")]
async fn keyword(r#type: u64) -> Result<(), AppError> {
    Ok(())
}

const KEY: &str = "orders";

#[distributed_lock(key = KEY)]
async fn not_a_literal() -> Result<(), AppError> {
    Ok(())
}

fn main() {}
