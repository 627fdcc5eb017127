//! Text forms of Strata values, as CSV holds them: ISO-8601 and kdb+ literals.
//!
//! Every form [`write_value`] prints, the matching `parse_*` reads back exactly, so a
//! table survives a CSV round trip when the reader is told the column types. Parsers
//! see text with surrounding whitespace already trimmed and return `None` for text
//! that is not of the form; the caller reports the row and the value.

use std::fmt::Write as _;

use crate::column_data::Column;
use crate::date::Date;
use crate::types::ColumnType;

const NS_PER_SECOND: i128 = 1_000_000_000;
const NS_PER_MINUTE: i128 = 60 * NS_PER_SECOND;
const NS_PER_HOUR: i128 = 60 * NS_PER_MINUTE;
const NS_PER_DAY: i128 = 24 * NS_PER_HOUR;

/// What a value of `ty` looks like in text, for error messages.
pub(crate) fn expected_form(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Boolean => "true, false, 1 or 0",
        ColumnType::Byte => "an integer 0..255",
        ColumnType::Short => "a 16-bit integer",
        ColumnType::Int => "a 32-bit integer",
        ColumnType::Long => "a 64-bit integer",
        ColumnType::Real | ColumnType::Float => "a number",
        ColumnType::Char => "a single character",
        ColumnType::Symbol | ColumnType::String => "text",
        ColumnType::Timestamp => {
            "YYYY-MM-DD[THH:MM[:SS[.nnnnnnnnn]]][Z|+HH:MM], YYYY.MM.DDDHH:MM:SS.nnnnnnnnn or nanoseconds since 1970"
        }
        ColumnType::Month => "YYYY-MM or YYYY.MM",
        ColumnType::Date => "YYYY-MM-DD or YYYY.MM.DD",
        ColumnType::Timespan => "[-][dD]HH:MM:SS[.nnnnnnnnn] or nanoseconds",
        ColumnType::Minute => "HH:MM",
        ColumnType::Second => "HH:MM:SS",
        ColumnType::Time => "HH:MM:SS[.mmm]",
    }
}

/// `true`/`false` (any case), `1` or `0`.
pub(crate) fn parse_bool(s: &str) -> Option<u8> {
    if s.eq_ignore_ascii_case("true") || s == "1" {
        Some(1)
    } else if s.eq_ignore_ascii_case("false") || s == "0" {
        Some(0)
    } else {
        None
    }
}

/// A timestamp as nanoseconds since the Unix epoch (UTC): a date (`-` or `.`
/// separated), optionally followed by `T`, a space or kdb+'s `D` and a clock time, and
/// an optional zone (`Z`, `+HH:MM`, `-HHMM`, `+HH`); or a bare integer of nanoseconds.
pub(crate) fn parse_timestamp(s: &str) -> Option<i64> {
    if let Ok(ns) = s.parse::<i64>() {
        return Some(ns);
    }
    i64::try_from(timestamp_ns(s)?).ok()
}

/// The first and last days a timestamp (i64 nanoseconds since 1970, `i64::MIN`
/// being the null) can hold, for messages.
pub(crate) const TIMESTAMP_RANGE: &str = "1677-09-21..2262-04-11";

/// Whether `s` is a well-formed date-time that a timestamp cannot hold (a year
/// such as 1600 or 2400), as opposed to text that is not a timestamp at all.
pub(crate) fn is_timestamp_out_of_range(s: &str) -> bool {
    s.parse::<i64>().is_err()
        && timestamp_ns(s).is_some_and(|ns| ns <= i128::from(i64::MIN) || ns > i128::from(i64::MAX))
}

/// A date-time's nanoseconds since the Unix epoch, in a range wider than a
/// timestamp's.
fn timestamp_ns(s: &str) -> Option<i128> {
    let day: Date = s.get(..10)?.parse().ok()?;
    let midnight = i128::from(day.0) * NS_PER_DAY;
    let rest = &s[10..];
    if rest.is_empty() {
        return Some(midnight);
    }
    let rest = rest.strip_prefix(['T', ' ', 'D'])?;
    let (clock_ns, zone) = clock(rest)?;
    Some(midnight + clock_ns - zone_offset(zone)?)
}

/// A zone suffix's offset from UTC in nanoseconds.
fn zone_offset(zone: &str) -> Option<i128> {
    if zone.is_empty() || zone == "Z" || zone == "z" {
        return Some(0);
    }
    let sign = match zone.as_bytes()[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = zone[1..].replace(':', "");
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        2 => (&digits[..2], "0"),
        4 => (&digits[..2], &digits[2..]),
        _ => return None,
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (i128, i128) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 23 && m <= 59).then_some(sign * (h * NS_PER_HOUR + m * NS_PER_MINUTE))
}

/// `HH:MM[:SS[.f]]` (any number of hour digits up to 9, 1 to 9 fraction digits) as
/// nanoseconds, and the text after it.
fn clock(s: &str) -> Option<(i128, &str)> {
    let hour_digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=9).contains(&hour_digits) {
        return None;
    }
    let hours: i128 = s[..hour_digits].parse().ok()?;
    let (minutes, mut rest) = two_digits(s[hour_digits..].strip_prefix(':')?)?;
    let mut ns = hours * NS_PER_HOUR + minutes * NS_PER_MINUTE;
    if let Some(after) = rest.strip_prefix(':') {
        let (seconds, after) = two_digits(after)?;
        ns += seconds * NS_PER_SECOND;
        rest = after;
        if let Some(after) = rest.strip_prefix('.') {
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            if !(1..=9).contains(&digits) {
                return None;
            }
            let fraction: i128 = after[..digits].parse().ok()?;
            ns += fraction * 10i128.pow(9 - digits as u32);
            rest = &after[digits..];
        }
    }
    Some((ns, rest))
}

/// Two digits below 60, and the text after them.
fn two_digits(s: &str) -> Option<(i128, &str)> {
    let d = s.get(..2)?;
    if !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i128 = d.parse().ok()?;
    (v < 60).then_some((v, &s[2..]))
}

/// A clock time `[-]HH:MM[:SS[.f]]` as nanoseconds (hours may pass 23, as kdb+'s
/// minute, second and time values may).
pub(crate) fn parse_clock(s: &str) -> Option<i128> {
    let (sign, body) = match s.strip_prefix('-') {
        Some(body) => (-1, body),
        None => (1, s),
    };
    match clock(body)? {
        (ns, "") => Some(sign * ns),
        _ => None,
    }
}

/// A clock time truncated to whole units of `unit_ns` nanoseconds, as an `i32`.
pub(crate) fn parse_clock_in(s: &str, unit_ns: i128) -> Option<i32> {
    i32::try_from(parse_clock(s)?.div_euclid(unit_ns)).ok()
}

/// A timespan in nanoseconds: kdb+'s `[-][dD]HH:MM[:SS[.f]]` (days optional) or a bare
/// integer of nanoseconds.
pub(crate) fn parse_timespan(s: &str) -> Option<i64> {
    if let Ok(ns) = s.parse::<i64>() {
        return Some(ns);
    }
    let (sign, body) = match s.strip_prefix('-') {
        Some(body) => (-1, body),
        None => (1, s),
    };
    let (days, clock_text) = match body.split_once('D') {
        Some((days, clock_text)) if !days.is_empty() && days.bytes().all(|b| b.is_ascii_digit()) => {
            (days.parse::<i128>().ok()?, clock_text)
        }
        Some(_) => return None,
        None => (0, body),
    };
    let ns = if clock_text.is_empty() && body.contains('D') {
        0
    } else {
        match clock(clock_text)? {
            (ns, "") => ns,
            _ => return None,
        }
    };
    i64::try_from(sign * (days * NS_PER_DAY + ns)).ok()
}

/// A month `YYYY-MM` or `YYYY.MM` (kdb+'s trailing `m` allowed) as months since
/// 1970-01.
pub(crate) fn parse_month(s: &str) -> Option<i32> {
    let s = s.strip_suffix('m').unwrap_or(s);
    let (year, month) = s.split_once(['-', '.'])?;
    if year.len() != 4 || month.len() != 2 || !format!("{year}{month}").bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (year, month): (i32, u32) = (year.parse().ok()?, month.parse().ok()?);
    Date::from_ymd(year, month, 1)?;
    Some((year - 1970) * 12 + month as i32 - 1)
}

/// A date (`YYYY-MM-DD` or `YYYY.MM.DD`) as days since 1970-01-01.
pub(crate) fn parse_date(s: &str) -> Option<i32> {
    s.parse::<Date>().ok().map(|d| d.0)
}

/// Appends row `row` of `column` in its text form; appends nothing for kdb+ nulls
/// (so a CSV cell is empty), char's space included.
pub(crate) fn write_value(out: &mut String, column: &Column, row: usize) {
    // `write!` into a String cannot fail.
    match column.ty() {
        ColumnType::Boolean => out.push_str(if column.values::<u8>()[row] != 0 { "true" } else { "false" }),
        ColumnType::Byte => _ = write!(out, "{}", column.values::<u8>()[row]),
        ColumnType::Short => write_unless(out, column.values::<i16>()[row], i16::MIN),
        ColumnType::Int => write_unless(out, column.values::<i32>()[row], i32::MIN),
        ColumnType::Long => write_unless(out, column.values::<i64>()[row], i64::MIN),
        // Debug prints the shortest text that parses back to the same bits, and keeps a
        // `.0` on whole numbers so the column is inferred as float again.
        ColumnType::Real => {
            let v = column.values::<f32>()[row];
            if !v.is_nan() {
                _ = write!(out, "{v:?}");
            }
        }
        ColumnType::Float => {
            let v = column.values::<f64>()[row];
            if !v.is_nan() {
                _ = write!(out, "{v:?}");
            }
        }
        ColumnType::Char => {
            let c = column.values::<u8>()[row];
            if c != b' ' {
                out.push(c as char);
            }
        }
        ColumnType::Symbol => out.push_str(column.symbol(row)),
        ColumnType::String => out.push_str(column.string(row)),
        ColumnType::Timestamp => {
            let ns = column.values::<i64>()[row];
            if ns != i64::MIN {
                let ns = i128::from(ns);
                let (y, m, d) = Date(ns.div_euclid(NS_PER_DAY) as i32).ymd();
                _ = write!(out, "{y:04}-{m:02}-{d:02}T");
                write_clock(out, ns.rem_euclid(NS_PER_DAY), 9);
            }
        }
        ColumnType::Date => {
            let days = column.values::<i32>()[row];
            if days != i32::MIN {
                let (y, m, d) = Date(days).ymd();
                _ = write!(out, "{y:04}-{m:02}-{d:02}");
            }
        }
        ColumnType::Month => {
            let months = column.values::<i32>()[row];
            if months != i32::MIN {
                let (y, m) = (1970 + months.div_euclid(12), months.rem_euclid(12) + 1);
                _ = write!(out, "{y:04}-{m:02}");
            }
        }
        ColumnType::Timespan => {
            let ns = column.values::<i64>()[row];
            if ns != i64::MIN {
                let ns = i128::from(ns);
                if ns < 0 {
                    out.push('-');
                }
                _ = write!(out, "{}D", ns.abs() / NS_PER_DAY);
                write_clock(out, ns.abs() % NS_PER_DAY, 9);
            }
        }
        ColumnType::Minute => write_signed_clock(out, column.values::<i32>()[row], NS_PER_MINUTE, None),
        ColumnType::Second => write_signed_clock(out, column.values::<i32>()[row], NS_PER_SECOND, Some(0)),
        ColumnType::Time => write_signed_clock(out, column.values::<i32>()[row], 1_000_000, Some(3)),
    }
}

fn write_unless<T: std::fmt::Display + PartialEq>(out: &mut String, v: T, null: T) {
    if v != null {
        _ = write!(out, "{v}");
    }
}

/// Writes `value` units of `unit_ns` as a clock time, `None` digits meaning no seconds.
fn write_signed_clock(out: &mut String, value: i32, unit_ns: i128, fraction_digits: Option<u32>) {
    if value == i32::MIN {
        return;
    }
    if value < 0 {
        out.push('-');
    }
    let ns = i128::from(value).abs() * unit_ns;
    match fraction_digits {
        None => _ = write!(out, "{:02}:{:02}", ns / NS_PER_HOUR, ns % NS_PER_HOUR / NS_PER_MINUTE),
        Some(digits) => write_clock(out, ns, digits),
    }
}

/// Writes non-negative `ns` as `HH:MM:SS` with `digits` fraction digits.
fn write_clock(out: &mut String, ns: i128, digits: u32) {
    let (h, m, s) = (ns / NS_PER_HOUR, ns % NS_PER_HOUR / NS_PER_MINUTE, ns % NS_PER_MINUTE / NS_PER_SECOND);
    _ = write!(out, "{h:02}:{m:02}:{s:02}");
    if digits > 0 {
        let fraction = ns % NS_PER_SECOND / 10i128.pow(9 - digits);
        _ = write!(out, ".{fraction:0width$}", width = digits as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOON_2024_01_02: i64 = 1_704_196_800_000_000_000;

    #[test]
    fn timestamps_parse_iso_and_kdb_forms() {
        let ns = NOON_2024_01_02 - 2 * 3600 * 1_000_000_000 - 30 * 60 * 1_000_000_000; // 09:30
        assert_eq!(parse_timestamp("2024-01-02T09:30:00.123456789"), Some(ns + 123_456_789));
        assert_eq!(parse_timestamp("2024-01-02 09:30:00"), Some(ns));
        assert_eq!(parse_timestamp("2024-01-02T09:30"), Some(ns));
        assert_eq!(parse_timestamp("2024.01.02D09:30:00.000000000"), Some(ns));
        assert_eq!(parse_timestamp("2024-01-02T09:30:00.5"), Some(ns + 500_000_000));
        assert_eq!(parse_timestamp("2024-01-02T10:30:00+01:00"), Some(ns));
        assert_eq!(parse_timestamp("2024-01-02T08:30:00-0100"), Some(ns));
        assert_eq!(parse_timestamp("2024-01-02T09:30:00Z"), Some(ns));
        assert_eq!(parse_timestamp("2024-01-02"), Some(ns - (9 * 60 + 30) * 60 * 1_000_000_000));
        assert_eq!(parse_timestamp("42"), Some(42));
        for bad in [
            "2024-01-02T9:3",
            "2024-13-02",
            "2024-01-02T09:60",
            "2024-01-02X09:30",
            "x",
            "",
            "2024-01-02T09:30:00.1234567891",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
        assert_eq!(parse_timestamp("2300-01-01"), None, "past i64 nanoseconds");
    }

    #[test]
    fn clocks_spans_and_months_parse() {
        assert_eq!(parse_clock_in("09:30", NS_PER_MINUTE), Some(570));
        assert_eq!(parse_clock_in("09:30:59", NS_PER_MINUTE), Some(570), "truncates");
        assert_eq!(parse_clock_in("-00:01", NS_PER_MINUTE), Some(-1));
        assert_eq!(parse_clock_in("25:00:01", NS_PER_SECOND), Some(90_001));
        assert_eq!(parse_clock_in("09:30:00.123", 1_000_000), Some(34_200_123));
        assert_eq!(parse_clock("9"), None);
        assert_eq!(parse_timespan("1D00:00:01"), Some(86_401_000_000_000));
        assert_eq!(parse_timespan("-0D00:00:00.000000001"), Some(-1));
        assert_eq!(parse_timespan("00:00:01"), Some(1_000_000_000));
        assert_eq!(parse_timespan("2D"), Some(2 * 86_400_000_000_000));
        assert_eq!(parse_timespan("D01:00"), None);
        assert_eq!(parse_month("1970-01"), Some(0));
        assert_eq!(parse_month("2024.02m"), Some(54 * 12 + 1));
        assert_eq!(parse_month("1969-12"), Some(-1));
        assert_eq!(parse_month("2024-13"), None);
        assert_eq!(parse_date("2024.01.02"), parse_date("2024-01-02"));
        assert_eq!(parse_bool("TRUE"), Some(1));
        assert_eq!(parse_bool("yes"), None);
    }

    #[test]
    fn every_written_form_parses_back() {
        fn text(column: &Column, row: usize) -> String {
            let mut s = String::new();
            write_value(&mut s, column, row);
            s
        }
        let ts = Column::from_values(ColumnType::Timestamp, vec![NOON_2024_01_02 + 1, -1, i64::MIN]).unwrap();
        assert_eq!(text(&ts, 0), "2024-01-02T12:00:00.000000001");
        assert_eq!(text(&ts, 1), "1969-12-31T23:59:59.999999999");
        assert_eq!(text(&ts, 2), "", "null is an empty cell");
        for row in 0..2 {
            assert_eq!(parse_timestamp(&text(&ts, row)), Some(ts.values::<i64>()[row]));
        }
        let span = Column::from_values(ColumnType::Timespan, vec![-86_401_000_000_001i64, 5]).unwrap();
        assert_eq!(text(&span, 0), "-1D00:00:01.000000001");
        for row in 0..2 {
            assert_eq!(parse_timespan(&text(&span, row)), Some(span.values::<i64>()[row]));
        }
        type Parse = fn(&str) -> Option<i32>;
        let cases: [(ColumnType, Parse); 5] = [
            (ColumnType::Month, parse_month),
            (ColumnType::Date, parse_date),
            (ColumnType::Minute, |s| parse_clock_in(s, NS_PER_MINUTE)),
            (ColumnType::Second, |s| parse_clock_in(s, NS_PER_SECOND)),
            (ColumnType::Time, |s| parse_clock_in(s, 1_000_000)),
        ];
        for (ty, parse) in cases {
            let mut values = vec![0i32, -1, 1, 20_000];
            if !matches!(ty, ColumnType::Month | ColumnType::Date) {
                values.extend([86_399_999, i32::MAX, i32::MIN + 1]); // clocks pass 24h
            }
            let column = Column::from_values(ty, values.clone()).unwrap();
            for (row, v) in values.iter().enumerate() {
                let t = text(&column, row);
                assert_eq!(parse(&t), Some(*v), "{ty} {v} printed as {t:?}");
            }
        }
        let minute = Column::from_values(ColumnType::Minute, vec![570i32]).unwrap();
        assert_eq!(text(&minute, 0), "09:30");
        let floats = Column::from_values(ColumnType::Float, vec![100.0f64, 0.1, f64::NAN, 1e300]).unwrap();
        assert_eq!((0..4).map(|r| text(&floats, r)).collect::<Vec<_>>(), ["100.0", "0.1", "", "1e300"]);
    }
}
