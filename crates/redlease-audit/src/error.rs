//! The one way an audit fails outright: a path that cannot be read.
//! Everything else (bad syntax, bad arguments) is a finding in the report.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A file or directory that could not be read.
#[derive(Debug)]
pub struct AuditError {
    /// The path that failed.
    pub path: PathBuf,
    /// Why.
    pub source: io::Error,
}

impl AuditError {
    pub(crate) fn io(path: &Path, source: io::Error) -> Self {
        Self {
            path: path.to_owned(),
            source,
        }
    }
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The OS capitalises its messages ("No such file or directory");
        // errors here are lowercase like the rest of the output.
        let reason = self.source.to_string();
        let mut chars = reason.chars();
        let reason = match chars.next() {
            Some(first) => first.to_lowercase().chain(chars).collect(),
            None => reason,
        };
        write!(f, "cannot read `{}`: {reason}", self.path.display())
    }
}

impl std::error::Error for AuditError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
