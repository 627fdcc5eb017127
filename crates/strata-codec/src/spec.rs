//! Compression specs: the small strings users write to say how a column is stored.
//!
//! Grammar: `[filter+]*codec[:level][@lbs]`, for example `zstd:3`, `delta+zstd:1@17`,
//! `shuffle+lz4hc:9`, `pco:8`, `none`. kdb+'s triple `lbs alg lvl` (as in
//! `.z.zd:17 2 6`) is accepted too. `auto[:ratio|write|read][@lbs]` asks for the
//! chain to be chosen per column when it is written (see [`crate::auto`]).
//!
//! ```
//! use strata_codec::{Algorithm, CompressionSpec, Filter};
//! let spec: CompressionSpec = "delta+zstd:1@16".parse().unwrap();
//! assert_eq!(spec.filters, vec![Filter::Delta]);
//! assert_eq!((spec.algorithm, spec.level, spec.lbs), (Algorithm::Zstd, 1, 16));
//! assert_eq!(spec.to_string(), "delta+zstd:1@16");
//! assert_eq!("16 2 6".parse::<CompressionSpec>().unwrap().to_string(), "gzip:6@16");
//! assert!("auto:write@16".parse::<CompressionSpec>().unwrap().is_auto());
//! ```

use std::fmt;
use std::str::FromStr;

use crate::CodecError;
use crate::algorithm::Algorithm;
use crate::auto::Objective;
use crate::element::{ElementKind, NumericClass};
use crate::filter::Filter;

/// The smallest logical block size exponent (4 KiB blocks), as in kdb+.
pub const MIN_LBS: u8 = 12;
/// The largest logical block size exponent (1 MiB blocks), as in kdb+.
pub const MAX_LBS: u8 = 20;
/// The block size exponent used when a spec gives none (128 KiB), kdb+'s usual 17.
pub const DEFAULT_LBS: u8 = 17;
/// At most this many filters precede a codec (they are stored in fixed header slots).
pub const MAX_FILTERS: usize = 4;

/// How a column is compressed: filters applied in order, then a codec at a level, in
/// independent blocks of `2^lbs` uncompressed bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompressionSpec {
    /// Filters applied left to right before the codec (and undone right to left).
    pub filters: Vec<Filter>,
    /// The codec.
    pub algorithm: Algorithm,
    /// The codec's level, within [`Algorithm::levels`].
    pub level: i32,
    /// Block size exponent, within [`MIN_LBS`]..=[`MAX_LBS`].
    pub lbs: u8,
    /// `Some` for `auto`: the chain is still to be chosen, per column, for this
    /// objective (filters, algorithm and level are then unused). Writers resolve it
    /// with [`crate::auto::choose`] and store the concrete spec.
    pub auto: Option<Objective>,
}

impl CompressionSpec {
    /// No compression: the column is written as a plain, mappable file.
    pub fn none() -> CompressionSpec {
        CompressionSpec { filters: Vec::new(), algorithm: Algorithm::None, level: 0, lbs: DEFAULT_LBS, auto: None }
    }

    /// `auto` for `objective` with blocks of `2^lbs` bytes: resolved per column when
    /// written.
    pub fn auto(objective: Objective, lbs: u8) -> CompressionSpec {
        CompressionSpec { auto: Some(objective), lbs, ..CompressionSpec::none() }
    }

    /// Whether this is `auto`, still to be resolved to a concrete chain.
    pub fn is_auto(&self) -> bool {
        self.auto.is_some()
    }

    /// A spec with no filters, checking the level and block size.
    pub fn new(algorithm: Algorithm, level: i32, lbs: u8) -> Result<CompressionSpec, CodecError> {
        let spec = CompressionSpec { filters: Vec::new(), algorithm, level, lbs, auto: None };
        spec.check_ranges()?;
        Ok(spec)
    }

    /// Whether columns with this spec are stored compressed (in blocks) at all
    /// (`auto` always resolves to a compressed chain).
    pub fn is_compressed(&self) -> bool {
        self.algorithm != Algorithm::None || !self.filters.is_empty() || self.is_auto()
    }

    /// Bytes per uncompressed block.
    pub fn block_bytes(&self) -> usize {
        1 << self.lbs
    }

    /// Checks that level and lbs are within range.
    pub fn check_ranges(&self) -> Result<(), CodecError> {
        let levels = self.algorithm.levels();
        if !levels.contains(&self.level) {
            return Err(CodecError::LevelOutOfRange {
                algorithm: self.algorithm,
                level: self.level,
                min: *levels.start(),
                max: *levels.end(),
            });
        }
        if !(MIN_LBS..=MAX_LBS).contains(&self.lbs) {
            return Err(CodecError::LbsOutOfRange(self.lbs as i64));
        }
        if self.filters.len() > MAX_FILTERS {
            return Err(CodecError::Unsuitable(format!("at most {MAX_FILTERS} filters, not {}", self.filters.len())));
        }
        Ok(())
    }

    /// Checks that the filters and codec can apply to elements of `kind`: delta needs
    /// integers, pcodec needs numbers of 2 or more bytes and no byte-level filters.
    /// `auto` suits every kind: it only chooses among suitable chains.
    pub fn check_suitable(&self, kind: ElementKind) -> Result<(), CodecError> {
        if self.is_auto() {
            return Ok(());
        }
        let mut kind = kind;
        for filter in &self.filters {
            if let Some(why) = filter.unsuitable_for(kind) {
                return Err(CodecError::Unsuitable(why));
            }
            kind = filter.output_kind(kind);
        }
        if self.algorithm == Algorithm::Pco {
            if kind.class == NumericClass::Opaque
                || kind.width < 2
                || kind.class == NumericClass::Float && kind.width < 4
            {
                return Err(CodecError::Unsuitable(format!(
                    "pco needs numeric or temporal elements of 2 or more bytes, not {kind}"
                )));
            }
            if let Some(f) = self.filters.iter().find(|f| matches!(f, Filter::Shuffle | Filter::Xor)) {
                return Err(CodecError::Unsuitable(format!("pco models numbers; {f} turns them into bytes first")));
            }
        }
        Ok(())
    }

    /// A one-line list of what the grammar accepts, used in parse errors.
    pub fn valid_forms() -> String {
        let codecs: Vec<String> = Algorithm::ALL
            .iter()
            .map(|a| {
                let l = a.levels();
                if l.start() == l.end() {
                    a.name().to_string()
                } else {
                    format!("{}:{}..{}", a.name(), l.start(), l.end())
                }
            })
            .collect();
        let filters: Vec<&str> = Filter::ALL.iter().map(|f| f.name()).collect();
        format!(
            "codecs {}; filters {} (joined with '+', before the codec); block size @{MIN_LBS}..{MAX_LBS}; auto[:ratio|write|read]; or kdb+'s 'lbs alg lvl'",
            codecs.join(", "),
            filters.join(", ")
        )
    }

    fn parse_kdb_triple(text: &str) -> Result<CompressionSpec, CodecError> {
        let numbers: Vec<&str> = text.split_whitespace().collect();
        let [lbs, alg, lvl] = numbers[..] else {
            return Err(bad_token(text, text));
        };
        let lbs: i64 = lbs.parse().map_err(|_| bad_token(text, lbs))?;
        let alg = alg.parse::<u8>().ok().and_then(Algorithm::from_code).ok_or_else(|| bad_token(text, alg))?;
        let level: i32 = lvl.parse().map_err(|_| bad_token(text, lvl))?;
        // kdb+ writes 0 0 0 for "no compression", whatever the block size.
        if alg == Algorithm::None {
            return Ok(CompressionSpec::none());
        }
        let lbs = u8::try_from(lbs).map_err(|_| CodecError::LbsOutOfRange(lbs))?;
        let spec = CompressionSpec { filters: Vec::new(), algorithm: alg, level, lbs, auto: None };
        spec.check_ranges()?;
        Ok(spec)
    }
}

fn bad_token(spec: &str, token: &str) -> CodecError {
    CodecError::BadSpec { spec: spec.to_string(), token: token.to_string(), valid: CompressionSpec::valid_forms() }
}

impl FromStr for CompressionSpec {
    type Err = CodecError;

    fn from_str(text: &str) -> Result<CompressionSpec, CodecError> {
        let text = text.trim();
        if text.starts_with(|c: char| c.is_ascii_digit()) && text.contains(' ') {
            return CompressionSpec::parse_kdb_triple(text);
        }
        let (body, lbs) = match text.split_once('@') {
            Some((body, lbs_text)) => {
                let lbs: i64 = lbs_text.parse().map_err(|_| bad_token(text, &format!("@{lbs_text}")))?;
                (body, u8::try_from(lbs).map_err(|_| CodecError::LbsOutOfRange(lbs))?)
            }
            None => (text, DEFAULT_LBS),
        };
        if let Some(rest) = body.trim().strip_prefix("auto") {
            let objective = match rest.strip_prefix(':') {
                Some(name) => name.trim().parse().map_err(|_| bad_token(text, &format!(":{name}")))?,
                None if rest.is_empty() => Objective::default(),
                None => return Err(bad_token(text, body)),
            };
            let spec = CompressionSpec::auto(objective, lbs);
            spec.check_ranges()?;
            return Ok(spec);
        }
        let mut parts: Vec<&str> = body.split('+').collect();
        let codec_part = parts.pop().unwrap_or_default();
        let filters = parts
            .iter()
            .map(|name| Filter::from_name(name.trim()).ok_or_else(|| bad_token(text, name)))
            .collect::<Result<Vec<_>, _>>()?;
        let (name, level_text) = match codec_part.split_once(':') {
            Some((name, level)) => (name.trim(), Some(level.trim())),
            None => (codec_part.trim(), None),
        };
        let algorithm = Algorithm::from_name(name).ok_or_else(|| bad_token(text, name))?;
        let level = match level_text {
            Some(l) => l.parse().map_err(|_| bad_token(text, &format!(":{l}")))?,
            None => algorithm.default_level(),
        };
        let spec = CompressionSpec { filters, algorithm, level, lbs, auto: None };
        spec.check_ranges()?;
        Ok(spec)
    }
}

impl fmt::Display for CompressionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(objective) = self.auto {
            f.write_str("auto")?;
            if objective != Objective::default() {
                write!(f, ":{objective}")?;
            }
            if self.lbs != DEFAULT_LBS {
                write!(f, "@{}", self.lbs)?;
            }
            return Ok(());
        }
        for filter in &self.filters {
            write!(f, "{filter}+")?;
        }
        f.write_str(self.algorithm.name())?;
        let levels = self.algorithm.levels();
        if levels.start() != levels.end() {
            write!(f, ":{}", self.level)?;
        }
        if self.is_compressed() && self.lbs != DEFAULT_LBS {
            write!(f, "@{}", self.lbs)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_examples() {
        for (text, canonical) in [
            ("zstd:3", "zstd:3"),
            ("delta+zstd:1@17", "delta+zstd:1"),
            ("shuffle+lz4hc:9", "shuffle+lz4hc:9"),
            ("pco:8", "pco:8"),
            ("none", "none"),
            ("gzip", "gzip:6"),
            ("zstd:-7@12", "zstd:-7@12"),
            ("dod+shuffle+zstd:1@20", "dod+shuffle+zstd:1@20"),
            ("qipc", "qipc"),
            ("17 5 1", "zstd:1"),
            ("0 0 0", "none"),
            ("auto", "auto"),
            ("auto:ratio", "auto"),
            ("auto:read@20", "auto:read@20"),
            ("auto:write", "auto:write"),
        ] {
            let spec: CompressionSpec = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(spec.to_string(), canonical, "{text}");
            assert_eq!(canonical.parse::<CompressionSpec>().unwrap(), spec);
        }
    }

    #[test]
    fn errors_name_the_bad_token_and_list_valid_forms() {
        let err = "delta+zsdt:3".parse::<CompressionSpec>().unwrap_err().to_string();
        assert!(err.contains("'zsdt'") && err.contains("zstd:-7..22") && err.contains("shuffle"), "{err}");
        let err = "delat+zstd".parse::<CompressionSpec>().unwrap_err().to_string();
        assert!(err.contains("'delat'"), "{err}");
        let err = "zstd:x".parse::<CompressionSpec>().unwrap_err().to_string();
        assert!(err.contains("':x'"), "{err}");
        let err = "zstd:23".parse::<CompressionSpec>().unwrap_err().to_string();
        assert!(err.contains("23") && err.contains("-7..22"), "{err}");
        let err = "lz4hc:17".parse::<CompressionSpec>().unwrap_err().to_string();
        assert!(err.contains("0..16"), "{err}");
        let err = "gzip:5@11".parse::<CompressionSpec>().unwrap_err().to_string();
        assert!(err.contains("11") && err.contains("12..20"), "{err}");
        assert!("gzip:5@21".parse::<CompressionSpec>().is_err());
        assert!("17 9 1".parse::<CompressionSpec>().is_err());
        let err = "auto:fast".parse::<CompressionSpec>().unwrap_err().to_string();
        assert!(err.contains("':fast'") && err.contains("auto[:ratio|write|read]"), "{err}");
        assert!("autox".parse::<CompressionSpec>().is_err());
        assert!("auto@11".parse::<CompressionSpec>().is_err());
    }

    #[test]
    fn suitability_depends_on_the_element_kind() {
        let floats = ElementKind::new(8, NumericClass::Float);
        let bytes = ElementKind::BYTES;
        assert!("delta+zstd".parse::<CompressionSpec>().unwrap().check_suitable(floats).is_err());
        assert!("xor+zstd".parse::<CompressionSpec>().unwrap().check_suitable(floats).is_ok());
        assert!("pco".parse::<CompressionSpec>().unwrap().check_suitable(bytes).is_err());
        assert!("shuffle+pco".parse::<CompressionSpec>().unwrap().check_suitable(floats).is_err());
        assert!("zstd".parse::<CompressionSpec>().unwrap().check_suitable(bytes).is_ok());
        assert!(
            "dec+delta+zstd".parse::<CompressionSpec>().unwrap().check_suitable(floats).is_ok(),
            "dec makes integers"
        );
        assert!("dec+pco".parse::<CompressionSpec>().unwrap().check_suitable(floats).is_ok());
        let ints = ElementKind::new(8, NumericClass::Signed);
        assert!("dec+zstd".parse::<CompressionSpec>().unwrap().check_suitable(ints).is_err());
    }
}
