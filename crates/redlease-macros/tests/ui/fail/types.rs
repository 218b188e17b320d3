use redlease::distributed_lock;

#[derive(Debug)]
struct AppError;

impl From<redlease::Error> for AppError {
    fn from(_: redlease::Error) -> Self {
        AppError
    }
}

struct Order {
    id: u64,
}

struct Service {
    name: String,
}

/// A field that the argument does not have.
#[distributed_lock(key = "orders:{order.number}")]
async fn ship(order: &Order) -> Result<u64, AppError> {
    Ok(order.id)
}

impl Service {
    /// A client expression that is not a client.
    #[distributed_lock(key = "orders:{id}", client = self.name)]
    async fn cancel(&self, id: u64) -> Result<u64, AppError> {
        Ok(id)
    }
}

fn main() {}
