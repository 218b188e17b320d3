//! Tests of the module's layout: the map in `mod.rs` names every file, and
//! the files import one way, as the crate's modules do (lib.rs's
//! `the_modules_import_without_a_cycle`), but file by file. A circle among
//! them (#38: `sentinel.rs` -> `sentinel/address.rs` -> `url.rs` ->
//! `sentinel.rs`, and every backend reaching up into `mod.rs` for the
//! types it shared) means none can be read, or moved, without the others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module inside `connection`, as a path: `[]` for `mod.rs`,
/// `["sentinel", "address"]` for `sentinel/address.rs`.
type Module = Vec<String>;

/// The paths a path or a `use` tree names, each with the name it goes
/// by: `a::{b, c::D as E}` is `[a, b]` (`b`) and `[a, c, D]` (`E`).
/// Reading stops at what is no part of a path (`(`, `<`, `;`).
fn paths(text: &str) -> Vec<(Vec<String>, String)> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut segments: Vec<String> = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let (mut out, mut depth, mut item) = (Vec::new(), 0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth > 0 => depth -= 1,
                    ',' | '}' => {
                        for (tail, name) in paths(&group[item..i]) {
                            let name = if name == "self" {
                                segments.last().cloned().unwrap_or(name)
                            } else {
                                name
                            };
                            out.push(([segments.clone(), tail].concat(), name));
                        }
                        if c == '}' {
                            break;
                        }
                        item = i + 1;
                    }
                    _ => {}
                }
            }
            return out;
        }
        let ident = &rest[..rest.find(|c| !is_ident(c)).unwrap_or(rest.len())];
        if ident.is_empty() {
            break;
        }
        segments.push(ident.to_owned());
        rest = &rest[ident.len()..];
        match rest.strip_prefix("::") {
            Some(more) => rest = more,
            None => break,
        }
    }
    let Some(last) = segments.last() else {
        return Vec::new();
    };
    let name = match rest.trim_start().strip_prefix("as ") {
        Some(alias) => alias
            .trim_start()
            .chars()
            .take_while(|&c| is_ident(c))
            .collect(),
        None => last.clone(),
    };
    vec![(segments, name)]
}

/// The files of `connection/` and what each brings in with `use`.
struct Files {
    /// Each module's file, relative to `connection/`.
    file: BTreeMap<Module, String>,
    /// By module, each name a `use` brings in and the path it names.
    uses: BTreeMap<Module, BTreeMap<String, Vec<String>>>,
}

impl Files {
    /// The module whose file holds what `path` names, read in `from`
    /// (`super::` and `self::` from there; `crate::` from the root,
    /// where only `crate::connection::..` is this module's); through
    /// a name a file brings in with `use`, the module it comes from.
    fn resolve(&self, from: &[String], path: &[String], depth: usize) -> Option<Module> {
        let mut at = from.to_vec();
        let mut rest = path;
        match path.first()?.as_str() {
            "crate" if path.get(1)? == "connection" => {
                at.clear();
                rest = &path[2..];
            }
            "crate" => return None,
            "self" => rest = &path[1..],
            _ => {
                while rest.first().is_some_and(|s| s == "super") {
                    at.pop()?;
                    rest = &rest[1..];
                }
            }
        }
        for (i, segment) in rest.iter().enumerate() {
            if segment == "self" {
                continue;
            }
            let child = [at.clone(), vec![segment.clone()]].concat();
            if self.file.contains_key(&child) {
                at = child;
                continue;
            }
            let used = self.uses.get(&at).and_then(|uses| uses.get(segment));
            return match used {
                // A name the file brings in: from where it comes (a
                // re-export's own file, not the one that passes it on).
                Some(used) if depth < 8 => {
                    let full = [used.clone(), rest[i + 1..].to_vec()].concat();
                    self.resolve(&at, &full, depth + 1).or(Some(at))
                }
                _ => Some(at),
            };
        }
        Some(at)
    }
}

/// Every file of this module: its path from `connection/`, and its text.
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/connection");
    redlease_testkit::rust_files(&root)
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(&root).unwrap().to_str().unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            (relative.replace('\\', "/"), text)
        })
        .collect()
}

/// The map at the top of `mod.rs` names every file of the module,
/// for a newcomer to find each from here (#38, where lib.rs's map
/// never said "Sentinel").
#[test]
fn the_map_names_every_file() {
    let map: Vec<&str> = include_str!("mod.rs")
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .collect();
    let map = map.join(" ");
    let sources = sources();
    assert!(sources.len() > 8, "{sources:?}");
    for (file, _) in sources.iter().filter(|(file, _)| file != "mod.rs") {
        assert!(
            map.contains(&format!("`{file}`")),
            "the map in connection/mod.rs does not name {file}"
        );
    }
}

#[test]
fn the_files_import_without_a_cycle() {
    let mut code: BTreeMap<Module, String> = BTreeMap::new();
    let mut files = Files {
        file: BTreeMap::new(),
        uses: BTreeMap::new(),
    };
    for (relative, text) in sources() {
        if relative == "layers.rs" {
            // This file: the paths in its strings are what it looks for,
            // not what it imports, and only a test build has it.
            continue;
        }
        let stem = relative.strip_suffix(".rs").unwrap();
        let mut module: Module = stem.split('/').map(str::to_owned).collect();
        if module.last().is_some_and(|last| last == "mod") {
            module.pop();
        }
        // The test modules aside, and comments.
        let lines = redlease_testkit::code_lines(&text);
        files.file.insert(module.clone(), relative);
        code.insert(module, lines.join("\n"));
    }
    assert!(files.file.len() > 8, "{:?}", files.file);
    // What each file brings in: `use` statements, each read to its `;`.
    for (module, text) in &code {
        let uses = files.uses.entry(module.clone()).or_default();
        for (at, _) in text.match_indices("use ") {
            let statement_start = text[..at]
                .rfind([';', '}', '{', '\n', ']'])
                .map_or(0, |i| i + 1);
            let before = text[statement_start..at].trim();
            if !matches!(before, "" | "pub" | "pub(crate)" | "pub(super)") {
                continue;
            }
            let statement = &text[at + "use ".len()..];
            let statement = &statement[..statement.find(';').unwrap_or(statement.len())];
            for (path, name) in paths(statement) {
                uses.insert(name, path);
            }
        }
    }
    // The edges: a `mod` child, and every `super::`, `self::` and
    // `crate::connection::` path, resolved to the file of what it names.
    let mut imports: BTreeMap<&Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, text) in &code {
        let used = imports.entry(module).or_default();
        for line in text.lines() {
            let line = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .fold(line, |line, p| line.strip_prefix(p).unwrap_or(line));
            if let Some(child) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) {
                used.insert([module.clone(), vec![child.to_owned()]].concat());
            }
        }
        for prefix in ["super::", "self::", "crate::"] {
            for (at, _) in text.match_indices(prefix) {
                let before = text[..at].chars().next_back();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                for (path, _) in paths(&text[at..]) {
                    if let Some(target) = files.resolve(module, &path, 0)
                        && &target != module
                        && files.file.contains_key(&target)
                    {
                        used.insert(target);
                    }
                }
            }
        }
    }
    // What the resolution must see: a name re-exported twice over
    // (in `mod.rs`, then in `sentinel.rs`) is an import of the file it
    // is in.
    let auth = ["super", "SentinelAuth"].map(str::to_owned);
    assert_eq!(
        files.resolve(&["url".to_owned()], &auth, 0),
        Some(vec!["sentinel".to_owned(), "address".to_owned()]),
    );
    let imports: BTreeMap<Module, BTreeSet<Module>> = imports
        .into_iter()
        .map(|(module, used)| (module.clone(), used))
        .collect();
    redlease_testkit::assert_one_way(&imports, "files of connection/", |m| files.file[m].clone());
}
