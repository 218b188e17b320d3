use redlease::distributed_lock;

#[distributed_lock(key = "receipt:{bill_id}")]
async fn returns_value(bill_id: u64) -> u64 {
    bill_id
}

#[distributed_lock(key = "receipt:{bill_id}")]
async fn returns_nothing(bill_id: u64) {
    let _ = bill_id;
}

#[distributed_lock(key = "receipt:{bill_id}")]
async fn returns_option(bill_id: u64) -> Option<u64> {
    Some(bill_id)
}

fn main() {}
