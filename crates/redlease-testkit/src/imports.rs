//! [`import_cycles`] and [`code_lines`]: the circles in a graph of what imports what, for the
//! tests that keep a crate's modules (or a module's files) importing one
//! way (redlease's lib.rs and `connection/layers.rs`, the bench's
//! `tests/imports.rs`), which read the graph from the sources each in
//! their own way and share this search.

use std::collections::{BTreeMap, BTreeSet};

/// The circles in `imports` (each node with what it imports): for every
/// node that can reach itself, the first path found back to it, starting
/// with that node (`[a, b, c]` for `a -> b -> c -> a`). Every node is
/// searched, so a change that closes several circles sees them all.
///
/// # Examples
///
/// ```
/// use std::collections::{BTreeMap, BTreeSet};
///
/// let mut imports: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
/// imports.insert("a", BTreeSet::from(["b"]));
/// imports.insert("b", BTreeSet::from(["a", "c"]));
/// imports.insert("c", BTreeSet::new());
/// assert_eq!(redlease_testkit::import_cycles(&imports), [vec!["a", "b"], vec!["b", "a"]]);
/// ```
pub fn import_cycles<N: Ord + Clone>(imports: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    let mut cycles = Vec::new();
    for start in imports.keys() {
        // Depth-first from `start`: reaching it again is a circle.
        let mut stack: Vec<Vec<&N>> = vec![vec![start]];
        let mut seen = BTreeSet::new();
        'search: while let Some(path) = stack.pop() {
            let last = *path.last().expect("a path starts with its node");
            for next in imports.get(last).into_iter().flatten() {
                if next == start {
                    cycles.push(path.into_iter().cloned().collect());
                    break 'search;
                }
                if seen.insert(next) {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push(longer);
                }
            }
        }
    }
    cycles
}

/// The lines of a Rust source `text` that its build sees: trimmed, without
/// comment lines, and up to its test module (`#[cfg(test)] mod ..`; a
/// `#[cfg(test)]` function is code the file keeps).
///
/// # Examples
///
/// ```
/// let text = "use a::b;\n// why\nfn f() {}\n#[cfg(test)]\nmod tests {}\n";
/// assert_eq!(redlease_testkit::code_lines(text), ["use a::b;", "fn f() {}"]);
/// ```
pub fn code_lines(text: &str) -> Vec<&str> {
    let end = text
        .match_indices("#[cfg(test)]")
        .map(|(at, tag)| (at, at + tag.len()))
        .find(|&(_, after)| text[after..].trim_start().starts_with("mod "))
        .map_or(text.len(), |(at, _)| at);
    text[..end]
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("//"))
        .collect()
}
