//! The report of a run: `report.json` (everything), `report.md` (a table
//! per fault kind) and `chart.svg` (each phase's holds per name over time,
//! faults shaded).

use std::fmt::Write as _;

use crate::check::Cause;
use crate::run::RunReport;

/// The report as Markdown.
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
    let _ = writeln!(
        md,
        "Seed {}, Redis {}, {} names per layout, clients: {}; lease {} ms, wait {} ms, work under the lock 2 x {} ms.{}\n",
        run.seed,
        run.redis_version,
        run.names,
        clients.join(", "),
        run.lease_ms,
        run.wait_ms,
        run.hold_ms,
        run.plant
            .as_ref()
            .map(|p| format!(" **Planted bug: {p}** (in every redlease client)."))
            .unwrap_or_default()
    );
    md.push_str(
        "| fault | seconds | faults | operations | acquired | busy | unknown | overlaps (cause) | unexplained | stale fenced writes accepted | fenced writes refused | fenced increments lost | unfenced updates lost | tokens against the hold order (cause) | releases refused | recovery, ms |\n",
    );
    md.push_str("|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|---|--:|--:|\n");
    for p in &run.phases {
        let c = &p.check;
        let overlap_causes = causes(c.overlaps.iter().map(|o| o.cause));
        let token_causes = causes(c.token_order.iter().map(|t| t.cause));
        let unexplained = c
            .overlaps
            .iter()
            .filter(|o| o.cause == Cause::Unexplained)
            .count();
        let recovery = p
            .recovery_ms
            .iter()
            .map(|(_, ms)| ms.map_or_else(|| "never".to_owned(), |ms| ms.to_string()))
            .max_by_key(|s| (s.len(), s.clone()))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} of {} | {} | {} | {} |",
            p.fault.as_str(),
            p.seconds,
            p.faults.len(),
            c.ops,
            c.acquired,
            c.busy,
            c.unknown,
            overlap_causes,
            unexplained,
            c.stale_writes.len(),
            c.fenced.refused,
            c.fenced.lost,
            c.unfenced.lost,
            c.unfenced.done,
            token_causes,
            c.released_not_owner,
            recovery,
        );
    }
    let violations: Vec<String> = run
        .phases
        .iter()
        .flat_map(|p| {
            p.violations(run.lease_ms)
                .into_iter()
                .map(move |v| format!("- {}: {v}", p.fault.as_str()))
        })
        .collect();
    md.push('\n');
    if violations.is_empty() {
        md.push_str("No violations.\n");
    } else {
        let _ = writeln!(md, "{} violations:\n", violations.len());
        for v in violations.iter().take(20) {
            let _ = writeln!(md, "{v}");
        }
        if violations.len() > 20 {
            let _ = writeln!(md, "- ... and {} more", violations.len() - 20);
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
        .map(|(cause, n)| {
            let name = match cause {
                Cause::Pause => "pause",
                Cause::Partition => "partition",
                Cause::Restart => "restart",
                Cause::Failover => "failover",
                Cause::Unexplained => "unexplained",
            };
            format!("{name} {n}")
        })
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
    // Each layout has its own names.
    let rows = (2 * run.names) as f64;
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
