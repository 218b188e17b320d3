//! The bench's modules import one way, as redlease's own do (its lib.rs
//! test `the_modules_import_without_a_cycle`): no two import each other,
//! directly or through others. #38 found `cluster.rs` -> `compare.rs` ->
//! `peer.rs` -> `redlock.rs` -> `cluster.rs`, a ring that made each of the
//! four a part of every other's measurement.
//!
//! An integration test, reading the sources: the crate is a binary, and
//! its root (`main.rs`) is the one file such a test must not need to touch.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `text` without its test modules and comment lines, one line.
fn code(text: &str) -> String {
    redlease_testkit::code_lines(text).join(" ")
}

/// The first name of each path after a `crate::` that starts `rest`: one,
/// or one per item of a `crate::{..}` group (only the group's own items:
/// in `crate::{a::{B, C}}`, `B` and `C` are `a`'s).
fn first_names(rest: &str) -> Vec<String> {
    let items: Vec<&str> = match rest.strip_prefix('{') {
        Some(group) => {
            let (mut depth, mut items, mut item) = (0, Vec::new(), 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth > 0 => depth -= 1,
                    ',' | '}' => {
                        items.push(&group[item..i]);
                        if c == '}' {
                            break;
                        }
                        item = i + 1;
                    }
                    _ => {}
                }
            }
            items
        }
        None => vec![rest],
    };
    items
        .iter()
        .map(|item| {
            item.trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

#[test]
fn the_modules_import_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let main = std::fs::read_to_string(src.join("main.rs")).unwrap();
    let main = code(&main);
    let statements: Vec<&str> = main.split(';').map(str::trim).collect();
    let modules: BTreeSet<&str> = statements
        .iter()
        .filter_map(|s| s.rsplit("] ").next()?.strip_prefix("mod "))
        .collect();
    assert!(modules.len() > 10, "{modules:?}");
    // The names main.rs brings in with `use <module>::..`, which a module
    // may reach as `crate::<Name>`: an import of the module it comes from.
    let mut brought: BTreeMap<&str, &str> = BTreeMap::new();
    for statement in &statements {
        let Some(path) = statement.rsplit("] ").next().unwrap().strip_prefix("use ") else {
            continue;
        };
        let Some((module, items)) = path.split_once("::") else {
            continue;
        };
        if !modules.contains(module) {
            continue;
        }
        for item in items.split([',', '{', '}']) {
            let item = item.rsplit(" as ").next().unwrap();
            let name = item.rsplit("::").next().unwrap().trim();
            if !name.is_empty() && name != "self" {
                brought.insert(name, module);
            }
        }
    }

    let mut imports: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for &module in &modules {
        // The module's file, and those of its own modules, if it has any.
        let mut files = vec![src.join(format!("{module}.rs"))];
        files.extend(redlease_testkit::rust_files(&src.join(module)));
        let used = imports.entry(module).or_default();
        for file in files.iter().filter(|f| f.exists()) {
            let text = code(&std::fs::read_to_string(file).unwrap());
            for (at, _) in text.match_indices("crate::") {
                for name in first_names(&text[at + "crate::".len()..]) {
                    let imported = match modules.get(name.as_str()) {
                        Some(&imported) => imported,
                        None => match brought.get(name.as_str()) {
                            Some(&imported) => imported,
                            None => continue,
                        },
                    };
                    if imported != module {
                        used.insert(imported);
                    }
                }
            }
        }
    }
    assert!(imports["versus"].contains("peer"), "{imports:?}");
    redlease_testkit::assert_one_way(&imports, "modules", |m| m.to_string());
}
