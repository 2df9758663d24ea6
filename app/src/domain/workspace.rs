//! The workspace that follows a user from node to node: a snapshot is a manifest of the files in
//! the workspace directory, each a list of content-addressed chunks (SHA-256, hex). The rules
//! here are what a manifest may hold and what a save may store; the node side chunks and
//! restores, the portal stores chunks and manifests.

use crate::domain::problem::Problem;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Chunks are cut by content (FastCDC) between these sizes, so an edit changes only the chunks
/// around it.
pub const MIN_CHUNK: u32 = 256 * 1024;
/// The chunker's target size.
pub const AVG_CHUNK: u32 = 1024 * 1024;
/// The largest chunk; the portal refuses bigger uploads.
pub const MAX_CHUNK: u32 = 4 * 1024 * 1024;
/// Most entries (files, directories, links) in one workspace.
pub const MAX_ENTRIES: usize = 200_000;
/// Longest relative path in a manifest, in bytes.
pub const MAX_PATH: usize = 4096;
/// Snapshots kept per user; older ones (and chunks only they use) are deleted.
pub const KEEP_SNAPSHOTS: usize = 3;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (stored as its target text, never followed).
    Symlink,
}

/// One file, directory or link of a workspace, by its path relative to the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// `/`-separated, relative, without `.` or `..` parts.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Permission bits (`0o7777` at most).
    pub mode: u32,
    /// Modification time, seconds since the epoch (files only; 0 otherwise).
    #[serde(default)]
    pub mtime: i64,
    /// Size in bytes (files only).
    #[serde(default)]
    pub size: u64,
    /// The file's chunks in order (files only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<String>,
    /// A link's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// A workspace as saved: its entries, parents before children.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Every entry.
    pub entries: Vec<Entry>,
}

/// A chunk a save needs, with its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRef {
    /// SHA-256 of its bytes, lowercase hex.
    pub hash: String,
    /// Its length.
    pub size: u32,
}

impl Manifest {
    /// Bytes of all files together (what the quota counts).
    pub fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.size).sum()
    }

    /// Number of files.
    pub fn files(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.kind == EntryKind::File)
            .count()
    }

    /// Every distinct chunk, in first-use order.
    pub fn chunk_hashes(&self) -> Vec<&str> {
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .flat_map(|e| e.chunks.iter())
            .filter(|h| seen.insert(h.as_str()))
            .map(String::as_str)
            .collect()
    }

    /// Checks a manifest sent to the portal: paths, kinds and hashes well formed, no path
    /// twice, every parent listed before its children.
    pub fn check(&self) -> Result<(), Problem> {
        if self.entries.len() > MAX_ENTRIES {
            return Err(Problem::BadManifest {
                detail: format!("more than {MAX_ENTRIES} entries"),
            });
        }
        let mut dirs: HashSet<&str> = HashSet::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for entry in &self.entries {
            let bad = |detail: &str| Problem::BadManifest {
                detail: format!("{}: {detail}", shorten(&entry.path)),
            };
            check_path(&entry.path).map_err(&bad)?;
            if !seen.insert(entry.path.as_str()) {
                return Err(bad("listed twice"));
            }
            if let Some((parent, _)) = entry.path.rsplit_once('/')
                && !dirs.contains(parent)
            {
                return Err(bad("its directory is not listed before it"));
            }
            if entry.mode > 0o7777 {
                return Err(bad("mode out of range"));
            }
            match entry.kind {
                EntryKind::Dir => {
                    if entry.size != 0 || !entry.chunks.is_empty() || entry.target.is_some() {
                        return Err(bad("a directory has no content"));
                    }
                    dirs.insert(entry.path.as_str());
                }
                EntryKind::Symlink => {
                    let target = entry.target.as_deref().unwrap_or("");
                    if target.is_empty() || target.len() > MAX_PATH || target.contains('\0') {
                        return Err(bad("a link needs a target"));
                    }
                    if entry.size != 0 || !entry.chunks.is_empty() {
                        return Err(bad("a link has no content"));
                    }
                }
                EntryKind::File => {
                    if entry.target.is_some() {
                        return Err(bad("a file has no target"));
                    }
                    if let Some(hash) = entry.chunks.iter().find(|h| !is_hash(h)) {
                        return Err(bad(&format!("`{}` is not a SHA-256 hash", shorten(hash))));
                    }
                    if (entry.size == 0) != entry.chunks.is_empty() {
                        return Err(bad("its size and chunks disagree"));
                    }
                    let most = entry.chunks.len() as u64 * u64::from(MAX_CHUNK);
                    if entry.size > most {
                        return Err(bad("its size and chunks disagree"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether `path` may be an entry's path (`Err`: why not).
pub fn check_path(path: &str) -> Result<(), &'static str> {
    if path.is_empty() || path.len() > MAX_PATH {
        return Err("the path is empty or too long");
    }
    if path.contains('\0') || path.starts_with('/') {
        return Err("the path must be relative");
    }
    if path
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err("the path has an empty, `.` or `..` part");
    }
    Ok(())
}

/// Whether `text` is a lowercase hex SHA-256.
pub fn is_hash(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Checks a save against the quota: `Err` says how much the workspace holds and the limit.
pub fn check_quota(bytes: u64, quota_bytes: u64) -> Result<(), Problem> {
    if bytes > quota_bytes {
        return Err(Problem::WorkspaceOverQuota {
            mib: bytes.div_ceil(1024 * 1024),
            quota_mib: quota_bytes / (1024 * 1024),
        });
    }
    Ok(())
}

/// Lowercase hex of `bytes`.
#[cfg(feature = "ssr")]
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A chunk's name: the lowercase hex SHA-256 of its bytes.
#[cfg(feature = "ssr")]
pub fn chunk_hash(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

fn shorten(text: &str) -> String {
    text.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, size: u64, chunks: &[&str]) -> Entry {
        Entry {
            path: path.into(),
            kind: EntryKind::File,
            mode: 0o644,
            mtime: 0,
            size,
            chunks: chunks.iter().map(|c| (*c).to_owned()).collect(),
            target: None,
        }
    }

    fn dir(path: &str) -> Entry {
        Entry {
            path: path.into(),
            kind: EntryKind::Dir,
            mode: 0o755,
            mtime: 0,
            size: 0,
            chunks: vec![],
            target: None,
        }
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn a_well_formed_manifest_passes_and_counts_its_chunks_once() {
        let manifest = Manifest {
            entries: vec![
                dir("src"),
                file("src/a.py", 10, &[A]),
                file("b.bin", 20, &[A, B]),
                file("empty", 0, &[]),
            ],
        };
        assert_eq!(manifest.check(), Ok(()));
        assert_eq!(manifest.bytes(), 30);
        assert_eq!(manifest.files(), 3);
        assert_eq!(manifest.chunk_hashes(), vec![A, B]);
    }

    #[test]
    fn paths_leaving_the_workspace_and_malformed_entries_are_refused() {
        for path in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a//b",
            "./a",
            "a/",
            "a\0b",
        ] {
            let manifest = Manifest {
                entries: vec![file(path, 1, &[A])],
            };
            assert!(
                matches!(manifest.check(), Err(Problem::BadManifest { .. })),
                "{path:?}"
            );
        }
        let orphan = Manifest {
            entries: vec![file("nodir/a", 1, &[A])],
        };
        assert!(orphan.check().is_err());
        let twice = Manifest {
            entries: vec![file("a", 1, &[A]), file("a", 1, &[A])],
        };
        assert!(twice.check().is_err());
        let bad_hash = Manifest {
            entries: vec![file("a", 1, &["ABC"])],
        };
        assert!(bad_hash.check().is_err());
        let too_big = Manifest {
            entries: vec![file("a", u64::from(MAX_CHUNK) + 1, &[A])],
        };
        assert!(too_big.check().is_err());
        let link_without_target = Manifest {
            entries: vec![Entry {
                kind: EntryKind::Symlink,
                ..dir("l")
            }],
        };
        assert!(link_without_target.check().is_err());
    }

    #[test]
    fn the_quota_names_both_sizes() {
        assert_eq!(check_quota(10, 10), Ok(()));
        assert_eq!(
            check_quota(3 * 1024 * 1024 + 1, 2 * 1024 * 1024),
            Err(Problem::WorkspaceOverQuota {
                mib: 4,
                quota_mib: 2
            })
        );
    }
}
