//! Per-channel message counters: sequence numbers and exchange trade ids.

/// Numbers each row 1, 2, ... within its channel in time order (ties keep row
/// order), as a feed numbers its messages. Rows sorted by symbol then time get
/// numbers that rise within each symbol with gaps, and the same numbers recur on
/// every channel: daily TAQ's sequence-number shape.
pub fn channel_sequence(times: &[i64], channels: &[u8], channel_count: usize) -> Vec<i32> {
    debug_assert_eq!(times.len(), channels.len());
    let mut by_channel: Vec<Vec<(i64, u32)>> = vec![Vec::new(); channel_count];
    for (row, (&t, &c)) in times.iter().zip(channels).enumerate() {
        by_channel[c as usize].push((t, row as u32));
    }
    let mut sequence = vec![0i32; times.len()];
    for rows in &mut by_channel {
        rows.sort_unstable();
        for (n, &(_, row)) in rows.iter().enumerate() {
            sequence[row as usize] = n as i32 + 1;
        }
    }
    sequence
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_time_within_each_channel() {
        // Two symbols on channel 0 interleaved in time, one on channel 1.
        let times = [10, 30, 20, 40, 5, 6];
        let channels = [0, 0, 0, 0, 1, 1];
        assert_eq!(channel_sequence(&times, &channels, 2), [1, 3, 2, 4, 1, 2]);
    }
}
