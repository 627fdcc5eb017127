//! Table specs: which compression each column gets, with a default, like kdb+'s
//! dictionary form of `.z.zd` (`` `a`b`!(17 2 9;17 5 1;17 2 6) ``).
//!
//! On disk a table spec is TOML:
//! ```toml
//! default = "zstd:1"        # columns not listed; omit to use the database default
//! [columns]
//! time = "delta+zstd:1"
//! price = "pco:8"
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use strata_codec::{Algorithm, CompressionSpec, ElementKind, Filter};

use crate::error::{IoContext, Result, StoreError};
use crate::types::ColumnType;

/// Compression per column with a default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableSpec {
    /// The spec for columns not named in `columns`; `None` defers to the database
    /// default.
    pub default: Option<CompressionSpec>,
    /// Specs for named columns. An explicit spec that cannot apply to its column's
    /// type is an error.
    pub columns: BTreeMap<String, CompressionSpec>,
}

#[derive(Serialize, Deserialize)]
struct SpecFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default: Option<String>,
    #[serde(default)]
    columns: BTreeMap<String, String>,
}

impl TableSpec {
    /// One spec for every column.
    pub fn uniform(spec: CompressionSpec) -> TableSpec {
        TableSpec { default: Some(spec), columns: BTreeMap::new() }
    }

    /// Reads a table spec file.
    pub fn load(path: &Path) -> Result<TableSpec> {
        let text = std::fs::read_to_string(path).at(path)?;
        TableSpec::parse(&text).map_err(|e| StoreError::Invalid(format!("{}: {e}", path.display())))
    }

    /// Parses table spec TOML.
    pub fn parse(text: &str) -> std::result::Result<TableSpec, String> {
        let file: SpecFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let parse = |what: &str, s: &str| s.parse::<CompressionSpec>().map_err(|e| format!("{what}: {e}"));
        let default = file.default.as_deref().map(|s| parse("default", s)).transpose()?;
        let columns = file
            .columns
            .iter()
            .map(|(c, s)| Ok((c.clone(), parse(&format!("column {c}"), s)?)))
            .collect::<std::result::Result<_, String>>()?;
        Ok(TableSpec { default, columns })
    }

    /// The TOML text of this spec.
    pub fn to_toml(&self) -> String {
        let file = SpecFile {
            default: self.default.as_ref().map(ToString::to_string),
            columns: self.columns.iter().map(|(c, s)| (c.clone(), s.to_string())).collect(),
        };
        toml::to_string(&file).expect("a spec file serialises")
    }

    /// The spec for column `name` of type `ty`, falling back to `database_default`.
    ///
    /// An explicit per-column spec must suit the type. A default is adapted instead,
    /// since it covers columns of every type: filters that cannot apply are dropped,
    /// and pcodec becomes zstd for types it cannot model.
    pub fn spec_for(&self, name: &str, ty: ColumnType, database_default: &CompressionSpec) -> Result<CompressionSpec> {
        let kind = ty.element_kind();
        if let Some(spec) = self.columns.get(name) {
            spec.check_suitable(kind)
                .map_err(|e| StoreError::Invalid(format!("column {name} ({ty}): spec {spec}: {e}")))?;
            return Ok(spec.clone());
        }
        Ok(adapt(self.default.as_ref().unwrap_or(database_default), kind))
    }
}

/// The nearest spec to `spec` that suits `kind`.
pub(crate) fn adapt(spec: &CompressionSpec, kind: ElementKind) -> CompressionSpec {
    let mut adapted = spec.clone();
    adapted.filters.retain(|f: &Filter| f.unsuitable_for(kind).is_none());
    if adapted.check_suitable(kind).is_err() && adapted.algorithm == Algorithm::Pco {
        adapted.algorithm = Algorithm::Zstd;
        adapted.level = Algorithm::Zstd.default_level();
        adapted.filters.retain(|f| *f != Filter::Xor && *f != Filter::Shuffle);
    }
    debug_assert!(adapted.check_suitable(kind).is_ok(), "{adapted} for {kind}");
    adapted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_specs_must_suit_defaults_adapt() {
        let spec = TableSpec::parse("default = \"delta+pco:8\"\n[columns]\nprice = \"xor+zstd:1\"\n").unwrap();
        let none = CompressionSpec::none();
        assert_eq!(spec.spec_for("price", ColumnType::Float, &none).unwrap().to_string(), "xor+zstd:1");
        assert_eq!(spec.spec_for("time", ColumnType::Timestamp, &none).unwrap().to_string(), "delta+pco:8");
        assert_eq!(spec.spec_for("size", ColumnType::Float, &none).unwrap().to_string(), "pco:8");
        assert_eq!(spec.spec_for("cond", ColumnType::Char, &none).unwrap().to_string(), "zstd:3");
        let bad = TableSpec::parse("[columns]\ncond = \"pco\"\n").unwrap();
        let err = bad.spec_for("cond", ColumnType::Char, &none).unwrap_err().to_string();
        assert!(err.contains("column cond (char)") && err.contains("pco"), "{err}");
        assert_eq!(TableSpec::default().spec_for("x", ColumnType::Long, &none).unwrap(), none);
    }

    #[test]
    fn files_round_trip_and_errors_name_the_entry() {
        let spec = TableSpec::parse("default = \"zstd:1\"\n[columns]\ntime = \"delta+zstd:1@16\"\n").unwrap();
        assert_eq!(TableSpec::parse(&spec.to_toml()).unwrap(), spec);
        let err = TableSpec::parse("[columns]\ntime = \"zstd:99\"\n").unwrap_err();
        assert!(err.contains("column time") && err.contains("99"), "{err}");
    }
}
