//! Environment profiles: what a session on a node needs (variables, a Python environment, a
//! setup script, dotfiles), validated and hashed here. A profile's versions never change once
//! written: an edit makes a new version, and a booking records the version it uses. Node agents
//! build a version on the reserved node before the start and cache it by [`ProfileSpec::hash`].

use crate::domain::problem::Problem;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Longest profile name, in characters.
pub const NAME_MAX: usize = 64;
/// Largest profile (all its parts together), in KiB.
pub const SIZE_MAX_KIB: usize = 512;
/// Longest line of a requirements list or value of a variable, in characters.
pub const LINE_MAX: usize = 1024;

/// Variables Berth sets on the node itself: a profile may not set them.
const RESERVED: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PATH",
    "VIRTUAL_ENV",
];

/// One environment variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variable {
    /// Its name (`[A-Za-z_][A-Za-z0-9_]*`).
    pub name: String,
    /// Its value (one line).
    pub value: String,
}

/// A file placed in the holder's home directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dotfile {
    /// Relative to the home directory (`.bashrc.d/tools.sh`).
    pub path: String,
    /// Its content.
    pub content: String,
}

/// What a session needs, as one version of a profile holds it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProfileSpec {
    /// Environment variables, in order.
    #[serde(default)]
    pub variables: Vec<Variable>,
    /// A Python version (`3.11`): the environment is built with `python3.11`. None: the node's
    /// `python3`, and only when there are packages.
    #[serde(default)]
    pub python: Option<String>,
    /// A requirements list, one requirement per line (`torch==2.5.1`, a wheel's address).
    #[serde(default)]
    pub packages: Vec<String>,
    /// A bash script run as the holder, in the home directory, after the packages.
    #[serde(default)]
    pub setup_script: String,
    /// Files placed in the home directory.
    #[serde(default)]
    pub dotfiles: Vec<Dotfile>,
}

impl ProfileSpec {
    /// The spec from its parts as a form or the API writes them, checked: `variables` as
    /// `NAME=value` lines, `packages` as a requirements file (blank lines and `#` comments
    /// dropped), dotfiles with an empty path and content dropped.
    pub fn parse(
        variables: &str,
        python: &str,
        packages: &str,
        setup_script: &str,
        dotfiles: Vec<Dotfile>,
    ) -> Result<Self, Problem> {
        let mut parsed = Vec::new();
        for line in variables.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                return Err(Problem::BadVariable {
                    raw: clip(line).to_owned(),
                });
            };
            parsed.push(Variable {
                name: name.trim().to_owned(),
                value: value.trim().to_owned(),
            });
        }
        let python = python.trim();
        let spec = ProfileSpec {
            variables: parsed,
            python: (!python.is_empty()).then(|| python.to_owned()),
            packages: packages
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(str::to_owned)
                .collect(),
            setup_script: setup_script.replace("\r\n", "\n"),
            dotfiles: dotfiles
                .into_iter()
                .filter(|d| !(d.path.trim().is_empty() && d.content.is_empty()))
                .map(|d| Dotfile {
                    path: d.path.trim().to_owned(),
                    content: d.content.replace("\r\n", "\n"),
                })
                .collect(),
        };
        spec.check()?;
        Ok(spec)
    }

    /// Checks every part (the API sends the spec as JSON and gets the same checks).
    pub fn check(&self) -> Result<(), Problem> {
        let mut names = BTreeSet::new();
        for variable in &self.variables {
            if !valid_name(&variable.name) {
                return Err(Problem::BadVariable {
                    raw: clip(&format!("{}={}", variable.name, variable.value)).to_owned(),
                });
            }
            if RESERVED.contains(&variable.name.as_str()) || variable.name.starts_with("BERTH_") {
                return Err(Problem::ReservedVariable {
                    name: variable.name.clone(),
                });
            }
            if variable.value.chars().count() > LINE_MAX
                || variable.value.chars().any(|c| c.is_control())
            {
                return Err(Problem::BadVariable {
                    raw: clip(&format!("{}={}", variable.name, variable.value)).to_owned(),
                });
            }
            if !names.insert(variable.name.as_str()) {
                return Err(Problem::ProfileTwice {
                    raw: variable.name.clone(),
                });
            }
        }
        if let Some(python) = &self.python
            && !valid_python(python)
        {
            return Err(Problem::BadPythonVersion {
                raw: clip(python).to_owned(),
            });
        }
        for line in &self.packages {
            if line.chars().count() > LINE_MAX || line.chars().any(|c| c.is_control()) {
                return Err(Problem::BadRequirement {
                    raw: clip(line).to_owned(),
                });
            }
        }
        if self.setup_script.contains('\0') {
            return Err(Problem::ProfileTooLarge {
                max_kib: SIZE_MAX_KIB,
            });
        }
        let mut paths = BTreeSet::new();
        for dotfile in &self.dotfiles {
            if !valid_dotfile_path(&dotfile.path) {
                return Err(Problem::BadDotfilePath {
                    raw: clip(&dotfile.path).to_owned(),
                });
            }
            if dotfile.content.contains('\0') {
                return Err(Problem::ProfileTooLarge {
                    max_kib: SIZE_MAX_KIB,
                });
            }
            if !paths.insert(dotfile.path.as_str()) {
                return Err(Problem::ProfileTwice {
                    raw: dotfile.path.clone(),
                });
            }
        }
        if self.size() > SIZE_MAX_KIB * 1024 {
            return Err(Problem::ProfileTooLarge {
                max_kib: SIZE_MAX_KIB,
            });
        }
        Ok(())
    }

    /// Bytes of all parts together.
    pub fn size(&self) -> usize {
        self.variables
            .iter()
            .map(|v| v.name.len() + v.value.len() + 2)
            .sum::<usize>()
            + self.packages.iter().map(|p| p.len() + 1).sum::<usize>()
            + self.setup_script.len()
            + self
                .dotfiles
                .iter()
                .map(|d| d.path.len() + d.content.len())
                .sum::<usize>()
    }

    /// Whether it builds a Python environment.
    pub fn has_python(&self) -> bool {
        self.python.is_some() || !self.packages.is_empty()
    }

    /// The content hash (SHA-256 of the canonical JSON, hex): two versions with the same content
    /// share a cache entry on a node.
    #[cfg(feature = "ssr")]
    pub fn hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let body = serde_json::to_vec(self).unwrap_or_default();
        crate::domain::workspace::hex(&Sha256::digest(&body))
    }

    /// The variables as `NAME=value` lines (the form's text).
    pub fn variables_text(&self) -> String {
        self.variables
            .iter()
            .map(|v| format!("{}={}\n", v.name, v.value))
            .collect()
    }

    /// The requirements list (the form's text).
    pub fn packages_text(&self) -> String {
        self.packages.iter().map(|p| format!("{p}\n")).collect()
    }
}

/// At most 80 characters of `raw`, for a message.
fn clip(raw: &str) -> &str {
    match raw.char_indices().nth(80) {
        Some((at, _)) => &raw[..at],
        None => raw,
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`, at most 128 characters.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 128
}

/// `3.N` or `3.NN`.
pub fn valid_python(raw: &str) -> bool {
    match raw.split_once('.') {
        Some(("3", minor)) => {
            !minor.is_empty() && minor.len() <= 2 && minor.chars().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

/// A relative path of plain components (no `.`, `..`, empty parts or control characters), at
/// most 255 characters.
pub fn valid_dotfile_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 255
        && !path.starts_with('/')
        && !path.chars().any(|c| c.is_control() || c == '\\')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// A content hash as Berth writes it (64 lower-case hex digits): safe as a directory name.
pub fn valid_hash(raw: &str) -> bool {
    raw.len() == 64 && raw.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
}

/// A profile's name, trimmed: 1 to [`NAME_MAX`] characters, one line.
pub fn profile_name(raw: &str) -> Result<String, Problem> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > NAME_MAX || name.chars().any(char::is_control) {
        return Err(Problem::ProfileName { max: NAME_MAX });
    }
    Ok(name.to_owned())
}

/// A profile as its owner (or a team member it is shared with) sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Who made it.
    pub owner_id: i64,
    /// The owner's name.
    pub owner_name: String,
    /// Shared with this team's members.
    pub team_id: Option<i64>,
    /// That team's name.
    pub team_name: Option<String>,
    /// The viewer's default profile.
    pub is_default: bool,
    /// The viewer may edit it (its owner).
    pub editable: bool,
    /// The latest version.
    pub version: ProfileVersion,
}

/// One version of a profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileVersion {
    /// Its id (what a booking records).
    pub id: i64,
    /// 1, 2, …
    pub number: i32,
    /// [`ProfileSpec::hash`].
    pub hash: String,
    /// Its content.
    pub spec: ProfileSpec,
    /// When it was made.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// A booking's profile, as its reservation shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookedProfile {
    /// The profile.
    pub profile_id: i64,
    /// Its name.
    pub name: String,
    /// The version the booking uses.
    pub version_id: i64,
    /// That version's number.
    pub number: i32,
    /// Its content hash.
    pub hash: String,
}

/// Where the preparation of a booking's environment on its node stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrepState {
    /// Not yet begun (the node starts it ahead of the start).
    Waiting,
    /// Being built.
    Preparing,
    /// Built (or found in the node's cache).
    Ready,
    /// The build failed.
    Failed,
}

impl PrepState {
    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            PrepState::Waiting => "waiting",
            PrepState::Preparing => "preparing",
            PrepState::Ready => "ready",
            PrepState::Failed => "failed",
        }
    }

    /// From the stored word.
    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "waiting" => PrepState::Waiting,
            "preparing" => PrepState::Preparing,
            "ready" => PrepState::Ready,
            "failed" => PrepState::Failed,
            _ => return None,
        })
    }
}

/// What an agent reports about a booking's environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrepReport {
    /// The reservation.
    pub reservation_id: i64,
    /// The version's content hash it built.
    pub hash: String,
    /// Where it stands.
    pub state: PrepState,
    /// When.
    pub at: chrono::DateTime<chrono::Utc>,
    /// Found in the node's cache (no build).
    #[serde(default)]
    pub cached: bool,
    /// The end of the build log (failed builds), at most [`LOG_MAX`] bytes.
    #[serde(default)]
    pub log: String,
}

/// Most bytes of a build log an agent reports.
pub const LOG_MAX: usize = 8 * 1024;

/// The end of `log`, at most [`LOG_MAX`] bytes, cut at a character boundary.
pub fn log_tail(log: &str) -> &str {
    if log.len() <= LOG_MAX {
        return log;
    }
    let mut at = log.len() - LOG_MAX;
    while !log.is_char_boundary(at) {
        at += 1;
    }
    &log[at..]
}

/// A booking's environment as its reservation page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preparation {
    /// The profile and version.
    pub profile: BookedProfile,
    /// Where it stands.
    pub state: PrepState,
    /// It came from the node's cache.
    pub cached: bool,
    /// When the node last said so.
    pub at: Option<chrono::DateTime<chrono::Utc>>,
    /// The end of the log of a failed build.
    pub log: String,
}

/// Shell-quotes `value` for a `NAME='value'` line a shell sources.
pub fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ProfileSpec {
        ProfileSpec::parse(
            "# comment\nHF_HOME=/data/hf\n TOKENIZERS_PARALLELISM = false \n",
            "3.11",
            "numpy==2.1.0\n\n# pinned\ntorch>=2.5\n",
            "echo hi\r\n",
            vec![
                Dotfile {
                    path: ".config/tool.toml".into(),
                    content: "a = 1\r\n".into(),
                },
                Dotfile {
                    path: " ".into(),
                    content: String::new(),
                },
            ],
        )
        .unwrap()
    }

    #[test]
    fn a_form_is_parsed_into_a_clean_spec() {
        let spec = spec();
        assert_eq!(spec.variables.len(), 2);
        assert_eq!(spec.variables[1].name, "TOKENIZERS_PARALLELISM");
        assert_eq!(spec.variables[1].value, "false");
        assert_eq!(spec.packages, vec!["numpy==2.1.0", "torch>=2.5"]);
        assert_eq!(spec.setup_script, "echo hi\n");
        assert_eq!(spec.dotfiles.len(), 1);
        assert_eq!(spec.dotfiles[0].content, "a = 1\n");
        assert!(spec.has_python());
    }

    #[test]
    fn the_hash_follows_the_content_only() {
        let a = spec();
        let b = spec();
        assert_eq!(a.hash(), b.hash());
        assert!(valid_hash(&a.hash()));
        let mut c = spec();
        c.packages.push("scipy".into());
        assert_ne!(a.hash(), c.hash());
    }

    #[test]
    fn bad_parts_are_refused_with_what_is_wrong() {
        let parse = |vars: &str, python: &str, dot: &str| {
            ProfileSpec::parse(
                vars,
                python,
                "",
                "",
                vec![Dotfile {
                    path: dot.into(),
                    content: "x".into(),
                }],
            )
        };
        assert!(matches!(
            parse("NOEQUALS", "", ".x"),
            Err(Problem::BadVariable { .. })
        ));
        assert!(matches!(
            parse("1A=b", "", ".x"),
            Err(Problem::BadVariable { .. })
        ));
        assert!(matches!(
            parse("CUDA_VISIBLE_DEVICES=0", "", ".x"),
            Err(Problem::ReservedVariable { .. })
        ));
        assert!(matches!(
            parse("BERTH_X=0", "", ".x"),
            Err(Problem::ReservedVariable { .. })
        ));
        assert!(matches!(
            parse("A=1\nA=2", "", ".x"),
            Err(Problem::ProfileTwice { .. })
        ));
        assert!(matches!(
            parse("", "2.7", ".x"),
            Err(Problem::BadPythonVersion { .. })
        ));
        assert!(matches!(
            parse("", "3.1.1", ".x"),
            Err(Problem::BadPythonVersion { .. })
        ));
        for bad in ["/etc/passwd", "../x", "a/../../b", "a//b", "./a", "a\nb"] {
            assert!(
                matches!(parse("", "", bad), Err(Problem::BadDotfilePath { .. })),
                "{bad:?}"
            );
        }
        let huge = "x".repeat(SIZE_MAX_KIB * 1024 + 1);
        assert!(matches!(
            ProfileSpec::parse("", "", "", &huge, vec![]),
            Err(Problem::ProfileTooLarge { .. })
        ));
        assert!(profile_name("  ").is_err());
        assert!(profile_name(&"n".repeat(NAME_MAX + 1)).is_err());
        assert_eq!(profile_name(" torch ").unwrap(), "torch");
    }

    #[test]
    fn values_are_quoted_for_a_shell() {
        assert_eq!(shell_quote("it's $HOME"), "'it'\\''s $HOME'");
    }

    #[test]
    fn a_log_tail_keeps_the_end_on_a_character_boundary() {
        let log = format!("{}é{}", "a".repeat(10), "b".repeat(LOG_MAX - 1));
        let tail = log_tail(&log);
        assert!(tail.len() <= LOG_MAX);
        assert!(tail.ends_with('b'));
        assert_eq!(log_tail("short"), "short");
    }
}
