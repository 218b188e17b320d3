//! The latches: a wait sees its latch open only after the latch's
//! count-downs were asked for (each round's latch is set to
//! [`LATCH_COUNT`] before the clients start; a count-down of unknown
//! outcome counts, as it may have happened). A restart or a failover that
//! loses the latch makes it read as open: excused from then on.

use std::collections::BTreeMap;

use super::holds::History;
use super::{Check, Class};
use crate::nemesis::{Fault, FaultKind};
use crate::workload::LATCH_COUNT;

pub(crate) fn check(history: &History, faults: &[Fault], out: &mut Check) {
    let mut by_name: BTreeMap<&str, Vec<&super::holds::LatchOp>> = BTreeMap::new();
    for op in &history.latch {
        by_name.entry(&op.name).or_default().push(op);
    }
    for (name, ops) in by_name {
        let mut count_downs: Vec<u64> = ops
            .iter()
            .filter(|o| o.count_down)
            .map(|o| o.invoked)
            .collect();
        count_downs.sort_unstable();
        for wait in ops.iter().filter(|o| !o.count_down && o.open) {
            out.latch_opened += 1;
            let at = wait.done.unwrap_or(u64::MAX);
            let asked = count_downs.partition_point(|&t| t < at) as u64;
            let lost = faults.iter().any(|f| {
                f.ok && f.start < at
                    && match f.kind {
                        FaultKind::Restart | FaultKind::Sentinel => true,
                        FaultKind::Cluster => {
                            f.names.is_empty() || f.names.iter().any(|n| n == name)
                        }
                        _ => false,
                    }
            });
            if asked < LATCH_COUNT && !lost {
                out.violations.push(Class::LatchEarly.line(format!(
                    "{name}: a wait saw it open after {asked} of {LATCH_COUNT} count-downs"
                )));
            }
        }
    }
}
