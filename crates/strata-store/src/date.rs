//! Calendar dates for partition names (`YYYY.MM.DD`), as days since the Unix epoch.

use std::fmt;
use std::str::FromStr;

use crate::error::StoreError;

/// A calendar date, stored as days since 1970-01-01 (the `date` column layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(pub i32);

impl Date {
    /// The date of year, month (1-12) and day (1-31), if it exists.
    pub fn from_ymd(year: i32, month: u32, day: u32) -> Option<Date> {
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        // Howard Hinnant's days_from_civil.
        let y = if month <= 2 { year - 1 } else { year };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (month as i32 + 9) % 12;
        let doy = (153 * mp + 2) / 5 + day as i32 - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        Some(Date(era * 146_097 + doe - 719_468))
    }

    /// Year, month and day.
    pub fn ymd(self) -> (i32, u32, u32) {
        let z = self.0 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        (yoe + era * 400 + i32::from(month <= 2), month, day)
    }

    /// Nanoseconds since the epoch at the start of this date (the timestamp layout).
    pub fn start_nanos(self) -> i64 {
        self.0 as i64 * 86_400 * 1_000_000_000
    }
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

impl FromStr for Date {
    type Err = StoreError;

    /// Parses `YYYY.MM.DD` (kdb+'s form) or `YYYY-MM-DD`.
    fn from_str(s: &str) -> Result<Date, StoreError> {
        let bad = || StoreError::Invalid(format!("{s:?} is not a date: expected YYYY.MM.DD"));
        let separator = if s.contains('.') { '.' } else { '-' };
        let parts: Vec<&str> = s.split(separator).collect();
        let [y, m, d] = parts[..] else { return Err(bad()) };
        let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        if y.len() != 4 || m.len() != 2 || d.len() != 2 || !digits(y) || !digits(m) || !digits(d) {
            return Err(bad());
        }
        let (y, m, d) = (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?, d.parse().map_err(|_| bad())?);
        Date::from_ymd(y, m, d).ok_or_else(bad)
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = self.ymd();
        write!(f, "{y:04}.{m:02}.{d:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        assert_eq!(Date::from_ymd(1970, 1, 1), Some(Date(0)));
        assert_eq!("2000.01.01".parse::<Date>().unwrap(), Date(10_957));
        assert_eq!("2024-02-29".parse::<Date>().unwrap().to_string(), "2024.02.29");
        for days in [-800_000, -1, 0, 59, 60, 11_016, 20_000, 2_932_896] {
            let d = Date(days);
            let (y, m, dd) = d.ymd();
            assert_eq!(Date::from_ymd(y, m, dd), Some(d));
        }
        for bad in ["2023.02.29", "2023.13.01", "20230101", "2023.1.01", "x", "2024-01.03", "+999.01.01"] {
            assert!(bad.parse::<Date>().is_err(), "{bad}");
        }
    }
}
