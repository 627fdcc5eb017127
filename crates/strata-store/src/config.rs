//! The database configuration file, `strata.toml` at the root.
//!
//! ```toml
//! [compression]
//! default = "zstd:1"     # like kdb+'s .z.zd: the spec for columns nobody specified
//! [write]
//! durability = "fsync"   # or "rename": skip fsync (faster, not power-cut safe)
//! [read]
//! verify_plain_checksums = true    # check a plain column's values checksum the first
//!                                  # time a process opens it (reads the file once);
//!                                  # false skips the check
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};
use strata_codec::CompressionSpec;

use crate::durable::{Durability, write_atomic};
use crate::error::{IoContext, Result, StoreError};

/// The configuration file's name at a database root.
pub const CONFIG_FILE: &str = "strata.toml";

/// Database-wide settings.
#[derive(Clone, Debug, PartialEq)]
pub struct DbConfig {
    /// Spec for columns that neither a table spec nor the caller names.
    pub default_spec: CompressionSpec,
    /// How far each write goes before it counts as done.
    pub durability: Durability,
    /// Whether readers check a plain column file's values against its checksum the
    /// first time their process opens it (each version of a file once per process,
    /// see `column::verified`). On by default: without it one flipped byte on disk is
    /// a silently wrong answer. The check reads every page of the file once, where a
    /// query might touch only some rows (crc32c runs at several GB/s); compressed
    /// blocks are always checked, as each is read. Headers and lengths are checked
    /// on every open regardless.
    pub verify_plain_checksums: bool,
}

impl Default for DbConfig {
    fn default() -> DbConfig {
        DbConfig { default_spec: CompressionSpec::none(), durability: Durability::Fsync, verify_plain_checksums: true }
    }
}

#[derive(Serialize, Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    compression: CompressionSection,
    #[serde(default)]
    write: WriteSection,
    #[serde(default)]
    read: ReadSection,
}

#[derive(Serialize, Deserialize, Default)]
struct CompressionSection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default: Option<String>,
}

#[derive(Serialize, Deserialize, Default)]
struct WriteSection {
    #[serde(default)]
    durability: Durability,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadSection {
    #[serde(default = "checked_by_default")]
    verify_plain_checksums: bool,
}

impl Default for ReadSection {
    fn default() -> ReadSection {
        ReadSection { verify_plain_checksums: checked_by_default() }
    }
}

fn checked_by_default() -> bool {
    true
}

impl DbConfig {
    /// Reads `root/strata.toml`; a missing file means defaults.
    pub fn load(root: &Path) -> Result<DbConfig> {
        let path = root.join(CONFIG_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(DbConfig::default()),
            Err(e) => return Err(StoreError::Io { path, source: e }),
        };
        let invalid = |e: String| StoreError::Invalid(format!("{}: {e}", path.display()));
        let file: ConfigFile = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let default_spec = match file.compression.default {
            Some(s) => s.parse().map_err(|e: strata_codec::CodecError| invalid(format!("compression.default: {e}")))?,
            None => CompressionSpec::none(),
        };
        Ok(DbConfig {
            default_spec,
            durability: file.write.durability,
            verify_plain_checksums: file.read.verify_plain_checksums,
        })
    }

    /// Writes `root/strata.toml` atomically.
    pub fn save(&self, root: &Path) -> Result<()> {
        let file = ConfigFile {
            compression: CompressionSection { default: Some(self.default_spec.to_string()) },
            write: WriteSection { durability: self.durability },
            read: ReadSection { verify_plain_checksums: self.verify_plain_checksums },
        };
        let text = toml::to_string(&file).expect("config serialises");
        std::fs::create_dir_all(root).at(root)?;
        write_atomic(&root.join(CONFIG_FILE), text.as_bytes(), self.durability)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_and_reports_bad_specs() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(DbConfig::load(dir.path()).unwrap(), DbConfig::default());
        let config = DbConfig {
            default_spec: "zstd:1".parse().unwrap(),
            durability: Durability::Rename,
            verify_plain_checksums: false,
        };
        config.save(dir.path()).unwrap();
        assert_eq!(DbConfig::load(dir.path()).unwrap(), config);
        std::fs::write(dir.path().join(CONFIG_FILE), "[read]\nverify_plain_checksum = true\n").unwrap();
        let err = DbConfig::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("verify_plain_checksum"), "a misspelt option is refused, not ignored: {err}");
        std::fs::write(dir.path().join(CONFIG_FILE), "[compression]\ndefault = \"zip\"\n").unwrap();
        let err = DbConfig::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("strata.toml") && err.contains("'zip'"), "{err}");
    }
}
