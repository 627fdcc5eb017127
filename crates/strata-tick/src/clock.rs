//! Wall-clock time in the tickerplant's zone: kdb+tick's `-o` offset applied to UTC.

use std::time::{SystemTime, UNIX_EPOCH};

use strata_ipc::value::EPOCH_OFFSET_NANOS;
use strata_store::Date;

/// Nanoseconds in a day.
pub const DAY_NANOS: i64 = 86_400 * 1_000_000_000;

/// A clock shifted by a fixed number of minutes from UTC (kdb+'s `-o`, in minutes
/// so half-hour zones work).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    /// Minutes added to UTC.
    pub offset_minutes: i32,
}

impl Clock {
    /// Local nanoseconds since 1970.01.01 (UTC shifted by the offset).
    pub fn now_nanos(&self) -> i64 {
        let utc = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
        utc + self.offset_minutes as i64 * 60 * 1_000_000_000
    }

    /// Today's date in the zone.
    pub fn today(&self) -> Date {
        date_of(self.now_nanos())
    }
}

/// The date holding local nanoseconds `nanos`.
pub fn date_of(nanos: i64) -> Date {
    Date(nanos.div_euclid(DAY_NANOS) as i32)
}

/// Local nanoseconds as a kdb+ timespan: the time of day.
pub fn time_of_day(nanos: i64) -> i64 {
    nanos.rem_euclid(DAY_NANOS)
}

/// Local nanoseconds as a kdb+ timestamp (nanoseconds since 2000.01.01).
pub fn kdb_timestamp(nanos: i64) -> i64 {
    nanos - EPOCH_OFFSET_NANOS
}

/// Nanoseconds until the next local midnight.
pub fn nanos_to_midnight(nanos: i64) -> i64 {
    DAY_NANOS - time_of_day(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_split_at_local_midnight() {
        let noon = 20_000 * DAY_NANOS + DAY_NANOS / 2;
        assert_eq!(date_of(noon), Date(20_000));
        assert_eq!(time_of_day(noon), DAY_NANOS / 2);
        assert_eq!(date_of(-1), Date(-1));
        assert_eq!(nanos_to_midnight(noon), DAY_NANOS / 2);
        assert_eq!(kdb_timestamp(EPOCH_OFFSET_NANOS), 0);
        let east = Clock { offset_minutes: 600 };
        assert!(east.now_nanos() > Clock::default().now_nanos());
    }
}
