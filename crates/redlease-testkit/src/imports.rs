//! [`import_cycles`], [`assert_one_way`], [`code_lines`] and [`rust_files`]: the circles in a graph of what imports what, for the
//! tests that keep a crate's modules (or a module's files) importing one
//! way (redlease's lib.rs and `connection/layers.rs`, the bench's
//! `tests/imports.rs`), which read the graph from the sources each in
//! their own way and share this search.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// Panics, listing every circle of [`import_cycles`] as `a -> b -> a`
/// with each node written by `name`, unless `imports` has none; `what`
/// says what imports what (`"modules"`).
///
/// # Examples
///
/// ```
/// use std::collections::{BTreeMap, BTreeSet};
///
/// let mut imports: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
/// imports.insert("a", BTreeSet::from(["b"]));
/// imports.insert("b", BTreeSet::new());
/// redlease_testkit::assert_one_way(&imports, "modules", |m| m.to_string());
/// imports.insert("b", BTreeSet::from(["a"]));
/// let circle = std::panic::catch_unwind(|| {
///     redlease_testkit::assert_one_way(&imports, "modules", |m| m.to_string())
/// });
/// assert!(circle.is_err());
/// ```
pub fn assert_one_way<N: Ord + Clone>(
    imports: &BTreeMap<N, BTreeSet<N>>,
    what: &str,
    name: impl Fn(&N) -> String,
) {
    // Every circle is listed, for a change that closes several.
    let cycles: Vec<String> = import_cycles(imports)
        .into_iter()
        .map(|path| {
            let names: Vec<String> = path.iter().map(&name).collect();
            format!("{} -> {}", names.join(" -> "), names[0])
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "{what} import each other:\n{}",
        cycles.join("\n")
    );
}

/// Every `.rs` file under `dir`, at any depth, sorted; none if `dir` is
/// missing.
///
/// # Examples
///
/// ```
/// let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
/// let files = redlease_testkit::rust_files(&src);
/// assert!(files.contains(&src.join("imports.rs")));
/// assert!(redlease_testkit::rust_files(&src.join("absent")).is_empty());
/// ```
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten() {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
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
