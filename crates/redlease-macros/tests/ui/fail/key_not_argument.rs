use redlease::distributed_lock;

#[derive(Debug)]
struct AppError;

impl From<redlease::Error> for AppError {
    fn from(_: redlease::Error) -> Self {
        AppError
    }
}

#[distributed_lock(key = "sales:receipt:lock:{bill}")]
async fn issue_receipt(bill_id: u64, amount: u64) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "payroll:{year}:{month}:{year}")]
async fn payroll(month: u8) -> Result<(), AppError> {
    Ok(())
}

#[distributed_lock(key = "ledger:{self.id}")]
async fn no_self() -> Result<(), AppError> {
    Ok(())
}

struct Order {
    id: u64,
}

#[distributed_lock(key = "orders:{order.id}:{line.number}:{customer}")]
async fn ship(order: Order, line_number: u32) -> Result<(), AppError> {
    Ok(())
}

fn main() {}
