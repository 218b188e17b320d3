//! Finding the `.rs` files under a root, in a fixed order so two runs over
//! the same tree print the same report.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::AuditError;

/// The `.rs` files under `root` (or `root` itself when it is a file), sorted
/// by path. Skips `target/` (build output, generated code) and hidden
/// directories (`.git`, `.cargo`); does not follow symlinked directories, so
/// a link loop cannot make the walk endless.
pub(crate) fn rust_files(root: &Path) -> Result<Vec<PathBuf>, AuditError> {
    let metadata = fs::metadata(root).map_err(|e| AuditError::io(root, e))?;
    if !metadata.is_dir() {
        // Named explicitly: read it whatever its extension.
        return Ok(vec![root.to_owned()]);
    }
    let mut files = Vec::new();
    visit_dir(root, &mut files)?;
    Ok(files)
}

fn visit_dir(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), AuditError> {
    let mut entries = fs::read_dir(dir)
        .and_then(|entries| entries.collect::<io::Result<Vec<_>>>())
        .map_err(|e| AuditError::io(dir, e))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let file_type = entry.file_type().map_err(|e| AuditError::io(&path, e))?;
        if file_type.is_dir() {
            if name != "target" && !name.starts_with('.') {
                visit_dir(&path, files)?;
            }
        } else if name.ends_with(".rs") && path.is_file() {
            // `is_file` follows a symlink to a file; a dangling link is skipped.
            files.push(path);
        }
    }
    Ok(())
}

/// `path` relative to `root`, with `/` separators on every platform so the
/// report reads the same in CI on any OS. A root that is itself the file
/// keeps the path as given.
pub(crate) fn display_path(root: &Path, path: &Path) -> String {
    let relative = match path.strip_prefix(root) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative,
        _ => path,
    };
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
