//! Loaders for NYSE daily TAQ files (uncompressed): the BBO quote file
//! (`SPLITS_US_ALL_BBO_*`) and the trade file (`EQY_US_ALL_TRADE_*`).
//!
//! Both are pipe-delimited text with a header line naming the fields and a closing
//! `END|date|count` line. Fields are matched to [`crate::QUOTE_SCHEMA`] and
//! [`crate::TRADE_SCHEMA`] by name with spaces removed (`Sale Condition` is
//! `SaleCondition`), so the field order of the file does not matter and fields Strata
//! does not keep are skipped. Times are `HHMMSS` followed by 9 (nanoseconds), 6 or
//! 3 fraction digits. A blank field is 0 for numbers and times, a space for chars;
//! one-letter flags load as booleans that are true for `Y`, `1`, `T` or any other
//! non-blank letter but `N` and `0`.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use strata_store::{Column, ColumnType, Table};

use crate::TaqDay;

/// Why a TAQ file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TaqFileError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The header lacks fields Strata needs.
    #[error("{}: header has no field for {missing}; header fields are: {found}", path.display())]
    MissingFields {
        /// The file.
        path: PathBuf,
        /// The columns not found, comma-separated.
        missing: String,
        /// The header's fields, comma-separated.
        found: String,
    },
    /// A field that does not parse as its column's type.
    #[error("{}: line {line}: field {column}: {value:?} is not {expected}", path.display())]
    BadField {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The column.
        column: String,
        /// The text found.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A line with fewer fields than the header.
    #[error("{}: line {line}: {found} fields, the header has {expected}", path.display())]
    ShortLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Fields on the line.
        found: usize,
        /// Fields in the header.
        expected: usize,
    },
}

/// Loads a BBO quote file into a `quote` table (file order, not yet sorted).
pub fn load_quotes(path: &Path) -> Result<Table, TaqFileError> {
    load(path, &crate::QUOTE_SCHEMA)
}

/// Loads a trade file into a `trade` table (file order, not yet sorted).
pub fn load_trades(path: &Path) -> Result<Table, TaqFileError> {
    load(path, &crate::TRADE_SCHEMA)
}

/// Loads a day from its quote and trade files, sorted by Symbol then Time as
/// [`TaqDay`] promises.
pub fn load_day(quotes: &Path, trades: &Path) -> Result<TaqDay, TaqFileError> {
    let sort = |table: Table, path: &Path| {
        table
            .xasc(&["Symbol", "Time"])
            .map_err(|e| TaqFileError::Io { path: path.to_path_buf(), source: std::io::Error::other(e.to_string()) })
    };
    Ok(TaqDay { quote: sort(load_quotes(quotes)?, quotes)?, trade: sort(load_trades(trades)?, trades)? })
}

/// One column being filled.
enum Builder {
    I64(Vec<i64>),
    I32(Vec<i32>),
    I16(Vec<i16>),
    F64(Vec<f64>),
    F32(Vec<f32>),
    Bytes(Vec<u8>),
    Text(Vec<String>),
}

impl Builder {
    fn for_type(ty: ColumnType) -> Builder {
        match ty {
            ColumnType::Timespan => Builder::I64(Vec::new()),
            ColumnType::Int => Builder::I32(Vec::new()),
            ColumnType::Short => Builder::I16(Vec::new()),
            ColumnType::Float => Builder::F64(Vec::new()),
            ColumnType::Real => Builder::F32(Vec::new()),
            ColumnType::Char | ColumnType::Boolean => Builder::Bytes(Vec::new()),
            ColumnType::Symbol | ColumnType::String => Builder::Text(Vec::new()),
            other => unreachable!("no TAQ column is a {other}"),
        }
    }

    /// Parses `field` as `ty`; on failure, what was expected.
    fn push(&mut self, ty: ColumnType, field: &str) -> Result<(), &'static str> {
        let blank = field.trim().is_empty();
        match self {
            Builder::I64(v) => {
                v.push(if blank { 0 } else { parse_time(field.trim()).ok_or("a time HHMMSS[fraction]")? })
            }
            Builder::I32(v) => v.push(if blank { 0 } else { field.trim().parse().map_err(|_| "an integer")? }),
            Builder::I16(v) => v.push(if blank { 0 } else { field.trim().parse().map_err(|_| "a small integer")? }),
            Builder::F64(v) => v.push(if blank { 0.0 } else { field.trim().parse().map_err(|_| "a price")? }),
            Builder::F32(v) => v.push(if blank { 0.0 } else { field.trim().parse().map_err(|_| "a price")? }),
            Builder::Bytes(v) if ty == ColumnType::Boolean => {
                v.push(u8::from(!matches!(field.trim(), "" | "N" | "0")));
            }
            Builder::Bytes(v) => match field.as_bytes() {
                [] => v.push(b' '),
                [c] => v.push(*c),
                _ => return Err("one character"),
            },
            Builder::Text(v) => v.push(field.trim_end().to_string()),
        }
        Ok(())
    }

    fn finish(self, ty: ColumnType) -> Column {
        match self {
            Builder::I64(v) => Column::from_values(ty, v),
            Builder::I32(v) => Column::from_values(ty, v),
            Builder::I16(v) => Column::from_values(ty, v),
            Builder::F64(v) => Column::from_values(ty, v),
            Builder::F32(v) => Column::from_values(ty, v),
            Builder::Bytes(v) => Column::from_values(ty, v),
            Builder::Text(v) if ty == ColumnType::Symbol => Ok(Column::from_symbols(v)),
            Builder::Text(v) => Ok(Column::from_strings(v)),
        }
        .expect("builders match their column types")
    }
}

/// `HHMMSS` plus 0, 3, 6 or 9 fraction digits, as nanoseconds since midnight.
fn parse_time(text: &str) -> Option<i64> {
    if text.len() < 6
        || !text.bytes().all(|b| b.is_ascii_digit())
        || text.len() > 15
        || !(text.len() - 6).is_multiple_of(3)
    {
        return None;
    }
    let n = |s: &str| s.parse::<i64>().ok();
    let (h, m, s) = (n(&text[0..2])?, n(&text[2..4])?, n(&text[4..6])?);
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    let fraction = &text[6..];
    let scale = 10i64.pow(9 - fraction.len() as u32);
    let sub = if fraction.is_empty() { 0 } else { n(fraction)? * scale };
    Some(((h * 60 + m) * 60 + s) * 1_000_000_000 + sub)
}

fn load(path: &Path, schema: &[(&str, ColumnType)]) -> Result<Table, TaqFileError> {
    let io = |source| TaqFileError::Io { path: path.to_path_buf(), source };
    let mut lines = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?).lines();
    let header = match lines.next() {
        Some(line) => line.map_err(io)?,
        None => String::new(),
    };
    let fields: Vec<String> = header.split('|').map(|f| f.replace(' ', "").to_ascii_lowercase()).collect();
    let positions: Vec<Option<usize>> =
        schema.iter().map(|(name, _)| fields.iter().position(|f| *f == name.to_ascii_lowercase())).collect();
    let missing: Vec<&str> = schema.iter().zip(&positions).filter(|(_, p)| p.is_none()).map(|((n, _), _)| *n).collect();
    if !missing.is_empty() {
        return Err(TaqFileError::MissingFields {
            path: path.to_path_buf(),
            missing: missing.join(", "),
            found: header.split('|').collect::<Vec<_>>().join(", "),
        });
    }
    let positions: Vec<usize> = positions.into_iter().flatten().collect();
    let mut builders: Vec<Builder> = schema.iter().map(|(_, ty)| Builder::for_type(*ty)).collect();
    for (i, line) in lines.enumerate() {
        let line = line.map_err(io)?;
        let number = i + 2;
        if line.starts_with("END|") || line.is_empty() {
            continue;
        }
        let values: Vec<&str> = line.split('|').collect();
        if values.len() < fields.len() {
            return Err(TaqFileError::ShortLine {
                path: path.to_path_buf(),
                line: number,
                found: values.len(),
                expected: fields.len(),
            });
        }
        for ((builder, &(name, ty)), &at) in builders.iter_mut().zip(schema).zip(&positions) {
            builder.push(ty, values[at]).map_err(|expected| TaqFileError::BadField {
                path: path.to_path_buf(),
                line: number,
                column: name.to_string(),
                value: values[at].to_string(),
                expected,
            })?;
        }
    }
    let columns = builders.into_iter().zip(schema).map(|(b, &(name, ty))| (name.to_string(), b.finish(ty))).collect();
    Ok(Table::new(columns).expect("every column got one value per line"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRADES: &str = "Time|Exchange|Symbol|Sale Condition|Trade Volume|Trade Price|Trade Stop Stock Indicator|Trade Correction Indicator|Sequence Number|Trade Id|Source of Trade|Trade Reporting Facility|Participant Timestamp|Trade Reporting Facility TRF Timestamp|Trade Through Exempt Indicator
093000123456789|Q|ZVZZT|@  I|37|10.07|N|00|1201|52983525027888|N||093000123000001||0
093001000000000|D|AAPL|@   |100|174.6099|N|00|1202|71675230447394|C|Q||093000999999000|1
END|20220331|2
";

    #[test]
    fn parses_times_at_every_precision() {
        assert_eq!(parse_time("093000"), Some(34_200_000_000_000));
        assert_eq!(parse_time("093000123"), Some(34_200_123_000_000));
        assert_eq!(parse_time("093000123456"), Some(34_200_123_456_000));
        assert_eq!(parse_time("093000123456789"), Some(34_200_123_456_789));
        for bad in ["0930", "09300012", "256000", "09a000", "0930001234567890"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_trade_file_loads_by_header_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("EQY_US_ALL_TRADE_20220331");
        std::fs::write(&path, TRADES).unwrap();
        let table = load_trades(&path).unwrap();
        assert_eq!(table.len(), 2);
        assert_eq!(table.names().len(), 15);
        assert_eq!(table.column("Time").unwrap().values::<i64>(), [34_200_123_456_789, 34_201_000_000_000]);
        assert_eq!(table.column("SaleCondition").unwrap().symbol(0), "@  I");
        assert_eq!(table.column("TradePrice").unwrap().values::<f32>(), [10.07, 174.6099]);
        assert_eq!(table.column("TradeReportingFacility").unwrap().values::<u8>(), [0, 1]);
        assert_eq!(table.column("TradeId").unwrap().string(1), "71675230447394");
        assert_eq!(table.column("ParticipantTimestamp").unwrap().values::<i64>()[1], 0, "blank");
        let day = load_day(&path, &path);
        assert!(day.unwrap_err().to_string().contains("Bid_Price"), "a trade file is not a quote file");
    }

    /// A BBO quote line: every field blank but the ones given, by column name.
    fn quote_line(set: &[(&str, &str)]) -> String {
        let value = |name: &str| set.iter().find(|(n, _)| *n == name).map_or("", |(_, v)| *v);
        crate::QUOTE_SCHEMA.iter().map(|(name, _)| value(name)).collect::<Vec<_>>().join("|")
    }

    #[test]
    fn a_quote_file_loads_and_a_day_comes_back_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let header = crate::QUOTE_SCHEMA.iter().map(|(name, _)| *name).collect::<Vec<_>>().join("|");
        let quotes = [
            header,
            quote_line(&[
                ("Time", "093001000000000"),
                ("Exchange", "P"),
                ("Symbol", "ZVZZT"),
                ("Bid_Price", "10.05"),
                ("Bid_Size", "2"),
                ("Offer_Price", "10.07"),
                ("Offer_Size", "3"),
                ("Quote_Condition", "R"),
                ("Sequence_Number", "1201"),
                ("Participant_Timestamp", "093000999000000"),
            ]),
            quote_line(&[
                ("Time", "093000500000"),
                ("Exchange", "Q"),
                ("Symbol", "AAPL"),
                ("Bid_Price", "174.5"),
                ("Bid_Size", "10"),
                ("Offer_Price", "174.61"),
                ("Offer_Size", "1"),
                ("Sequence_Number", "1202"),
            ]),
            "END|20220331|2".into(),
        ];
        let quote_path = dir.path().join("SPLITS_US_ALL_BBO_Z_20220331");
        std::fs::write(&quote_path, quotes.join("\n")).unwrap();
        let table = load_quotes(&quote_path).unwrap();
        assert_eq!(table.len(), 2);
        assert_eq!(table.names().len(), crate::QUOTE_SCHEMA.len());
        assert_eq!(table.column("Time").unwrap().values::<i64>(), [34_201_000_000_000, 34_200_500_000_000]);
        assert_eq!(table.column("Symbol").unwrap().symbol(1), "AAPL");
        assert_eq!(table.column("Bid_Price").unwrap().values::<f64>(), [10.05, 174.5]);
        assert_eq!(table.column("Offer_Size").unwrap().values::<i32>(), [3, 1]);
        assert_eq!(table.column("Exchange").unwrap().values::<u8>(), b"PQ");
        assert_eq!(table.column("Participant_Timestamp").unwrap().values::<i64>(), [34_200_999_000_000, 0]);

        let trade_path = dir.path().join("EQY_US_ALL_TRADE_20220331");
        std::fs::write(&trade_path, TRADES).unwrap();
        let day = load_day(&quote_path, &trade_path).unwrap();
        let symbols =
            |t: &Table| (0..t.len()).map(|i| t.column("Symbol").unwrap().symbol(i).to_string()).collect::<Vec<_>>();
        assert_eq!(symbols(&day.quote), ["AAPL", "ZVZZT"], "quotes sorted by Symbol then Time");
        assert_eq!(symbols(&day.trade), ["AAPL", "ZVZZT"], "trades sorted by Symbol then Time");
    }

    #[test]
    fn bad_lines_name_the_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, TRADES.replace("|37|", "|3x7|")).unwrap();
        let err = load_trades(&path).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("TradeVolume") && err.contains("\"3x7\""), "{err}");
        std::fs::write(&path, TRADES.replace("|1202|71675230447394|C|Q||093000999999000|1", "|1202")).unwrap();
        let err = load_trades(&path).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains("fields"), "{err}");
    }
}
