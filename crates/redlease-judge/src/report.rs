//! The report of a run: `report.json` (everything), `report.md` (a table
//! per fault kind) and `chart.svg` (each phase's holds per name over time,
//! faults shaded).

use std::fmt::Write as _;

use crate::check::{Cause, Class};
use crate::nemesis::FaultKind;
use crate::run::RunReport;

/// The report as Markdown: what each phase did, what its faults excused,
/// what each check found, and the violations.
pub(crate) fn markdown(run: &RunReport) -> String {
    let mut md = String::new();
    let clients: Vec<String> = run
        .clients
        .iter()
        .map(|c| {
            serde_json::to_value(c)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        })
        .collect();
    let plant = run
        .plant
        .and_then(|p| serde_json::to_value(p).ok())
        .and_then(|v| v.as_str().map(str::to_owned));
    let _ = writeln!(
        md,
        "Seed {}, Redis {}, {} plain lock names per layout, clients: {}; lease {} ms, wait {} ms, work under the lock 2 x {} ms per step.{}\n",
        run.seed,
        run.redis_version,
        run.names,
        clients.join(", "),
        run.lease_ms,
        run.wait_ms,
        run.hold_ms,
        plant
            .map(|p| format!(" **Planted bug: {p}** (in redlease, every redlease client)."))
            .unwrap_or_default()
    );
    md.push_str("What each phase did:\n\n");
    md.push_str("| fault | seconds | faults (hit a holder) | operations | acquired | busy | unknown | releases refused | fenced writes refused | unfenced updates lost | latch waits opened | recovery, ms |\n");
    md.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for p in &run.phases {
        let c = &p.check;
        let recovery = p
            .check
            .recovery_ms
            .iter()
            .map(|(_, ms)| ms.map_or_else(|| "never".to_owned(), |ms| ms.to_string()))
            .max_by_key(|s| (s.len(), s.clone()))
            .unwrap_or_default();
        let hit = c.faults.iter().filter(|f| f.hit).count();
        let faults = match p.fault {
            FaultKind::Pause | FaultKind::Kill | FaultKind::Partition => {
                format!("{} ({hit})", p.faults.len())
            }
            _ => p.faults.len().to_string(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {faults} | {} | {} | {} | {} | {} | {} | {} of {} | {} | {recovery} |",
            p.fault.as_str(),
            p.seconds,
            c.counts.ops,
            c.counts.acquired,
            c.counts.busy,
            c.counts.unknown,
            c.counts.released_not_owner,
            c.fenced.refused,
            c.unfenced.lost,
            c.unfenced.done,
            c.latch_opened,
        );
    }
    if run.phases.iter().any(|p| p.outcome.gc.is_some()) {
        md.push_str("\nWhat the collector removed while the clients ran (`--gc-ms`, #40), entries by kind:\n\n");
        md.push_str("| fault | every, ms | runs | runs a fault stopped | keys a run looked at, at most | fair-queue | expired-permits | read-timeout | leader-record |\n");
        md.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        for p in &run.phases {
            let Some(gc) = &p.outcome.gc else { continue };
            let n = |kind: &str| gc.removed.get(kind).copied().unwrap_or(0);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                p.fault.as_str(),
                gc.every_ms,
                gc.runs,
                gc.failed,
                gc.most_keys,
                n("fair-queue"),
                n("expired-permits"),
                n("read-timeout"),
                n("leader-record"),
            );
        }
    }
    md.push_str("\nWhat the faults excused (two holds of one name at once, each explained by one fault or a violation):\n\n");
    md.push_str("| fault | overlaps (cause) | excused by one fault, at most | longest excused, ms | latest lost hold asked after its failover, ms | unexplained | unexplained that #29's blame excused |\n");
    md.push_str("|---|---|--:|--:|--:|--:|--:|\n");
    for p in &run.phases {
        let c = &p.check;
        let most = c.faults.iter().map(|f| f.excused).max().unwrap_or(0);
        let longest = c.faults.iter().map(|f| f.longest_us).max().unwrap_or(0) / 1000;
        let late = c.faults.iter().map(|f| f.late_us).max().unwrap_or(0) / 1000;
        let broad = (c.overlaps.iter())
            .filter(|o| o.cause == Cause::Unexplained && o.broad)
            .count();
        let _ = writeln!(
            md,
            "| {} | {} | {most} | {longest} | {late} | {} | {broad} |",
            p.fault.as_str(),
            causes(c.overlaps.iter().map(|o| o.cause)),
            c.count(Class::UnexplainedOverlap),
        );
    }
    md.push_str("\nWhat each check found (violations):\n\n");
    let classes = [
        Class::UnexplainedOverlap,
        Class::ReleaseInside,
        Class::ReleaseLost,
        Class::NotTold,
        Class::TokenOrder,
        Class::TokenTwice,
        Class::ReadTwice,
        Class::ReaderSawWrite,
        Class::StaleWrite,
        Class::FencedChain,
        Class::FairOrder,
        Class::PermitExcess,
        Class::PermitCount,
        Class::LatchEarly,
        Class::ErrorWithTimeLeft,
        Class::Recovery,
        Class::Invalid,
    ];
    md.push_str("| fault |");
    for class in classes {
        let _ = write!(md, " {} |", class.words());
    }
    md.push_str("\n|---|");
    for _ in classes {
        md.push_str("--:|");
    }
    md.push('\n');
    for p in &run.phases {
        let _ = write!(md, "| {} |", p.fault.as_str());
        for class in classes {
            let _ = write!(md, " {} |", p.check.count(class));
        }
        md.push('\n');
    }
    let violations: Vec<String> = run
        .phases
        .iter()
        .flat_map(|p| {
            p.violations()
                .into_iter()
                .map(move |v| format!("- {}: {v}", p.fault.as_str()))
        })
        .collect();
    md.push('\n');
    if violations.is_empty() {
        md.push_str("No violations.\n");
    } else {
        let _ = writeln!(md, "{} violations:\n", violations.len());
        for v in violations.iter().take(30) {
            let _ = writeln!(md, "{v}");
        }
        if violations.len() > 30 {
            let _ = writeln!(md, "- ... and {} more", violations.len() - 30);
        }
    }
    md
}

/// `3 (pause 2, restart 1)`, or `0`.
fn causes(all: impl Iterator<Item = Cause>) -> String {
    let mut counts = std::collections::BTreeMap::new();
    let mut total = 0;
    for cause in all {
        *counts.entry(cause).or_insert(0) += 1;
        total += 1;
    }
    if counts.is_empty() {
        return "0".to_owned();
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(cause, n)| format!("{} {n}", cause.as_str()))
        .collect();
    format!("{total} ({})", parts.join(", "))
}

/// The chart: one band per phase, one row per name, each hold a bar
/// coloured by client, faults shaded behind, unexplained overlaps in red.
pub(crate) fn svg(run: &RunReport) -> String {
    const WIDTH: f64 = 1000.0;
    const LEFT: f64 = 140.0;
    const ROW: f64 = 14.0;
    const GAP: f64 = 36.0;
    let palette = [
        "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
    ];
    let mut clients: Vec<String> = Vec::new();
    for p in &run.phases {
        for h in &p.check.holds {
            if !clients.contains(&h.client) {
                clients.push(h.client.clone());
            }
        }
    }
    let colour = |client: &str| {
        let i = clients.iter().position(|c| c == client).unwrap_or(0);
        palette[i % palette.len()]
    };
    // Each phase has as many rows as names held; bands are one height.
    let rows = run
        .phases
        .iter()
        .map(|p| {
            let mut names: Vec<&str> = p.check.holds.iter().map(|h| h.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            names.len()
        })
        .max()
        .unwrap_or(1) as f64;
    let band = rows * ROW + GAP;
    let height = run.phases.len() as f64 * band + 30.0 + ROW * 3.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (k, p) in run.phases.iter().enumerate() {
        let top = k as f64 * band + 20.0;
        let span = (p.end.saturating_sub(p.start)).max(1) as f64;
        let x = |t: u64| LEFT + (t.saturating_sub(p.start) as f64 / span) * (WIDTH - LEFT - 10.0);
        let _ = writeln!(
            s,
            r#"<text x="4" y="{}" font-weight="bold">{} ({} s)</text>"#,
            top - 4.0,
            p.fault.as_str(),
            p.seconds
        );
        for f in &p.faults {
            let (x0, x1) = (x(f.start), x(f.end).max(x(f.start) + 1.5));
            let _ = writeln!(
                s,
                r##"<rect x="{x0:.1}" y="{top}" width="{:.1}" height="{}" fill="#bbbbbb" opacity="0.5"><title>{} {}</title></rect>"##,
                x1 - x0,
                rows * ROW,
                f.kind.as_str(),
                f.target
            );
        }
        let nemesis_x = x(p.nemesis_end);
        let _ = writeln!(
            s,
            r##"<line x1="{nemesis_x:.1}" x2="{nemesis_x:.1}" y1="{top}" y2="{}" stroke="#333" stroke-dasharray="3,3"/>"##,
            top + rows * ROW
        );
        // A tick every 5 s under the band.
        let axis = top + rows * ROW;
        let mut second = 0;
        while second <= p.seconds + 5 {
            let tx = x(p.start + second * 1_000_000);
            if tx > WIDTH - 10.0 {
                break;
            }
            let _ = writeln!(
                s,
                r##"<line x1="{tx:.1}" x2="{tx:.1}" y1="{axis}" y2="{:.1}" stroke="#999"/><text x="{:.1}" y="{:.1}" font-size="9" fill="#666">{second} s</text>"##,
                axis + 3.0,
                tx + 1.5,
                axis + 11.0
            );
            second += 5;
        }
        let mut names: Vec<&str> = p.check.holds.iter().map(|h| h.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        for (row, name) in names.iter().enumerate() {
            let y = top + row as f64 * ROW;
            let short = name.rsplit(':').next().unwrap_or(name);
            let _ = writeln!(
                s,
                r#"<text x="80" y="{}">name {short}</text>"#,
                y + ROW - 3.0
            );
            // One path per client and row, bars that touch at this scale
            // merged, no title per hold: a long run has tens of thousands
            // of holds, and one element each would weigh megabytes.
            let mut paths: Vec<(&str, String)> = Vec::new();
            let mut bar: Option<(f64, f64, &str)> = None;
            let mut draw = |(x0, x1, fill): (f64, f64, &'static str)| {
                let i = match paths.iter().position(|(f, _)| *f == fill) {
                    Some(i) => i,
                    None => {
                        paths.push((fill, String::new()));
                        paths.len() - 1
                    }
                };
                let _ = write!(
                    paths[i].1,
                    "M{x0:.1} {:.1}h{:.1}v{}h-{:.1}z",
                    y + 1.0,
                    x1 - x0,
                    ROW - 2.0,
                    x1 - x0
                );
            };
            for h in p.check.holds.iter().filter(|h| h.name == *name) {
                let (x0, x1) = (x(h.start), x(h.end).max(x(h.start) + 0.8));
                let fill = colour(&h.client);
                bar = match bar {
                    Some((b0, b1, f)) if f == fill && x0 <= b1 + 0.3 => Some((b0, b1.max(x1), f)),
                    Some(done) => {
                        draw(done);
                        Some((x0, x1, fill))
                    }
                    None => Some((x0, x1, fill)),
                };
            }
            if let Some(done) = bar {
                draw(done);
            }
            for (fill, d) in paths {
                let _ = writeln!(s, r#"<path fill="{fill}" d="{d}"/>"#);
            }
        }
        for o in p
            .check
            .overlaps
            .iter()
            .filter(|o| o.cause == Cause::Unexplained)
        {
            let row = names.iter().position(|n| *n == o.name).unwrap_or(0);
            let y = top + row as f64 * ROW;
            let _ = writeln!(
                s,
                r#"<rect x="{:.1}" y="{y:.1}" width="3" height="{ROW}" fill="red"><title>unexplained overlap {} / {}</title></rect>"#,
                LEFT - 6.0,
                o.first,
                o.second
            );
        }
    }
    let mut legend_y = height - ROW;
    let mut lx = 4.0;
    for c in &clients {
        if lx + 13.0 + 6.5 * c.len() as f64 > WIDTH - 60.0 {
            // Wrap to a second line; `height` keeps room for it.
            lx = 4.0;
            legend_y += ROW + 2.0;
        }
        let _ = writeln!(
            s,
            r#"<rect x="{lx}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{}" y="{legend_y:.1}">{c}</text>"#,
            legend_y - 9.0,
            colour(c),
            lx + 13.0
        );
        lx += 13.0 + 6.5 * c.len() as f64 + 14.0;
    }
    let _ = writeln!(
        s,
        r##"<rect x="{lx}" y="{:.1}" width="10" height="10" fill="#bbbbbb"/><text x="{}" y="{legend_y:.1}">fault</text>"##,
        legend_y - 9.0,
        lx + 13.0
    );
    s.push_str("</svg>\n");
    s
}
