//! Join keys as 64-bit codes, so rows of both sides compare as integers: strings
//! (plain or dictionary-encoded) by an interned id shared by both sides, numbers and
//! times by their bits. A dictionary's values are coded once, not per row.
//! [`KeyGroups`] groups the left side's rows by key; a [`GroupFinder`] finds the
//! group of each right row.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, IntervalMonthDayNanoType};
use arrow_array::{Array, ArrayRef, Int64Array};
use arrow_schema::{DataType, IntervalUnit};
use datafusion::arrow::compute::cast;
use datafusion::common::{HashMap, Result, exec_err};

/// The code of a key no left row has (or a null key, which equals nothing).
pub const ABSENT: u64 = u64::MAX;

/// Interned strings and the codes of dictionaries already seen.
#[derive(Clone, Debug, Default)]
pub struct KeyCoder {
    strings: HashMap<String, u64>,
    dictionaries: HashMap<(usize, usize), Vec<u64>>,
}

impl KeyCoder {
    /// The code of every row of `array`. With `learn`, new strings get new ids (the
    /// left side); without, they are [`ABSENT`] (the right side: no left row can
    /// match them).
    pub fn codes(&mut self, array: &ArrayRef, learn: bool) -> Result<Vec<u64>> {
        let n = array.len();
        // The null mask read once: `Array::is_valid` per row is a dynamic call.
        let nulls = array.nulls().cloned();
        let valid = |i: usize| nulls.as_ref().is_none_or(|nulls| nulls.is_valid(i));
        Ok(match array.data_type() {
            DataType::Dictionary(_, value_type) if value_type.is_string() => {
                let dict = array.as_any_dictionary();
                let values = dict.values();
                // No values (an empty side, or every key null): nothing can match, and
                // Arrow's normalized_keys refuses an empty dictionary.
                if values.is_empty() {
                    return Ok(vec![ABSENT; n]);
                }
                let id = (values.to_data().buffers().first().map_or(0, |b| b.as_ptr() as usize), values.len());
                if !self.dictionaries.contains_key(&id) || learn {
                    let coded = self.codes(values, learn)?;
                    self.dictionaries.insert(id, coded);
                }
                let value_codes = &self.dictionaries[&id];
                let keys = dict.normalized_keys();
                (0..n).map(|i| if valid(i) { value_codes[keys[i]] } else { ABSENT }).collect()
            }
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                let text = cast(array, &DataType::Utf8)?;
                let text = text.as_string::<i32>();
                (0..n)
                    .map(|i| {
                        if !valid(i) {
                            return ABSENT;
                        }
                        let s = text.value(i);
                        match self.strings.get(s) {
                            Some(code) => *code,
                            None if learn => {
                                let code = self.strings.len() as u64;
                                self.strings.insert(s.to_string(), code);
                                code
                            }
                            None => ABSENT,
                        }
                    })
                    .collect()
            }
            t if t.is_integer() || t.is_temporal() || *t == DataType::Boolean => {
                let ints = cast(array, &DataType::Int64)?;
                let ints = ints.as_primitive::<Int64Type>();
                (0..n).map(|i| if valid(i) { ints.value(i) as u64 } else { ABSENT }).collect()
            }
            t if t.is_floating() => {
                let floats = cast(array, &DataType::Float64)?;
                let floats = floats.as_primitive::<arrow_array::types::Float64Type>();
                (0..n).map(|i| if valid(i) { floats.value(i).to_bits() } else { ABSENT }).collect()
            }
            t => return exec_err!("a time join cannot use a {t} column as a key"),
        })
    }
}

/// The time column as `i64` values (nanoseconds, days, ... as stored). Null times
/// are `None`.
pub fn times(array: &ArrayRef) -> Result<Vec<Option<i64>>> {
    Ok(time_column(array)?.iter().collect())
}

/// The time column as an `Int64Array` (nanoseconds, days, ... as stored), nulls
/// kept.
pub fn time_column(array: &ArrayRef) -> Result<Int64Array> {
    let t = array.data_type();
    if !(t.is_integer() || t.is_temporal()) {
        return exec_err!("a time join needs an integer or temporal time column, not {t}");
    }
    // DataFusion types `duration - interval` as an interval: count it in nanoseconds
    // when it has a fixed length.
    if let DataType::Interval(IntervalUnit::MonthDayNano) = t {
        return array
            .as_primitive::<IntervalMonthDayNanoType>()
            .iter()
            .map(|v| match v {
                None => Ok(None),
                Some(v) if v.months == 0 => Ok(Some(v.days as i64 * NANOS_PER_DAY + v.nanoseconds)),
                Some(_) => exec_err!("a time join's window cannot be counted in months: they have no fixed length"),
            })
            .collect();
    }
    Ok(cast(array, &DataType::Int64)?.as_primitive::<Int64Type>().clone())
}

/// Nanoseconds in a day, to count intervals of days.
const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// The rows of one side grouped by their key codes.
#[derive(Debug, Default)]
pub struct KeyGroups {
    /// Each group's rows, ascending.
    pub groups: Vec<Vec<u32>>,
    by_key: HashMap<Vec<u64>, u32>,
    /// The groups whose first key code is this one, with their second codes when
    /// there are two key columns: a right row whose first code is not here is
    /// skipped after one lookup per run of that code.
    by_first: HashMap<u64, Vec<(u64, u32)>>,
}

/// With two key columns, a run's groups are found by indexing a table with the
/// row's second code when every second code of the run is below this (codes of
/// strings are small: they count the strings seen); otherwise by hashing the key.
const DIRECT_CODES: u64 = 4096;

impl KeyGroups {
    /// Groups rows `0..rows` by `codes` (one code vector per key column; no columns:
    /// one group). Rows with an [`ABSENT`] code, or for which `skip` says so, join
    /// nothing and are left out.
    pub fn new(codes: &[Vec<u64>], rows: usize, skip: impl Fn(usize) -> bool) -> KeyGroups {
        let mut grouped = KeyGroups::default();
        let mut key = Vec::with_capacity(codes.len());
        for row in 0..rows {
            key.clear();
            key.extend(codes.iter().map(|c| c[row]));
            if key.contains(&ABSENT) || skip(row) {
                continue;
            }
            let next = grouped.groups.len() as u32;
            let g = *grouped.by_key.entry_ref(key.as_slice()).or_insert(next);
            if g == next {
                grouped.groups.push(Vec::new());
                let (first, second) = (key.first().copied().unwrap_or(0), key.get(1).copied().unwrap_or(0));
                grouped.by_first.entry(first).or_default().push((second, g));
            }
            grouped.groups[g as usize].push(row as u32);
        }
        grouped
    }

    /// A finder for the groups of another batch's rows, given their key codes
    /// (coded by the same [`KeyCoder`], in the same column order).
    pub fn finder(&self, codes: Vec<Vec<u64>>) -> GroupFinder<'_> {
        GroupFinder { groups: self, codes, run_code: ABSENT, run: Run::Absent, by_second: Vec::new(), key: Vec::new() }
    }
}

/// How the groups of one run of first codes are found.
#[derive(Clone, Copy, Debug)]
enum Run {
    /// No left row has the run's first code.
    Absent,
    /// One key column: the run's one group.
    One(u32),
    /// Two key columns with small second codes: [`GroupFinder::by_second`].
    Direct,
    /// By hashing the row's key.
    Hashed,
}

/// Finds the group of each row of one batch. Inputs sorted by key come in runs of
/// one first-key code: each run is looked up once.
pub struct GroupFinder<'a> {
    groups: &'a KeyGroups,
    codes: Vec<Vec<u64>>,
    /// The first code of the run the last row was in, and how to find its groups.
    run_code: u64,
    run: Run,
    /// For a [`Run::Direct`] run, each second code's group plus one (0: none).
    by_second: Vec<u32>,
    key: Vec<u64>,
}

impl GroupFinder<'_> {
    /// The group `row` belongs to, if any.
    pub fn group(&mut self, row: usize) -> Option<usize> {
        let Some(first) = self.codes.first() else { return (!self.groups.groups.is_empty()).then_some(0) };
        let code = first[row];
        if code != self.run_code {
            self.start_run(code);
        }
        match self.run {
            Run::Absent => None,
            Run::One(g) => Some(g as usize),
            Run::Direct => {
                let second = self.codes[1][row];
                let g = *self.by_second.get(usize::try_from(second).ok()?)?;
                (g > 0).then(|| g as usize - 1)
            }
            Run::Hashed => {
                self.key.clear();
                self.key.extend(self.codes.iter().map(|c| c[row]));
                self.groups.by_key.get(self.key.as_slice()).map(|g| *g as usize)
            }
        }
    }

    /// The end of the run of rows from `row` on that have all of `row`'s key codes
    /// (so its group), at most `end`.
    pub fn key_run_end(&self, row: usize, end: usize) -> usize {
        // The last column first, then each earlier one only as far as the later
        // ones agree: a short run of the last column never scans the long run of
        // the first.
        self.codes.iter().rev().fold(end, |end, codes| {
            let code = codes[row];
            codes[row + 1..end].iter().position(|c| *c != code).map_or(end, |at| row + 1 + at)
        })
    }

    /// Looks up the groups of a new run of first code `code`.
    fn start_run(&mut self, code: u64) {
        self.run_code = code;
        let candidates = match code {
            ABSENT => None,
            code => self.groups.by_first.get(&code),
        };
        self.run = match (candidates, self.codes.len()) {
            (None, _) => Run::Absent,
            (Some(candidates), 1) => Run::One(candidates[0].1),
            (Some(candidates), 2) if candidates.iter().all(|(second, _)| *second < DIRECT_CODES) => {
                let size = candidates.iter().map(|(second, _)| *second as usize + 1).max().unwrap_or(0);
                self.by_second.clear();
                self.by_second.resize(size, 0);
                for (second, g) in candidates {
                    self.by_second[*second as usize] = g + 1;
                }
                Run::Direct
            }
            _ => Run::Hashed,
        };
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{DictionaryArray, Int64Array, StringArray, types::UInt32Type};

    use super::*;

    #[test]
    fn groups_and_finds_keys_across_string_forms() {
        let mut coder = KeyCoder::default();
        let left: ArrayRef = Arc::new(StringArray::from(vec![Some("A"), Some("B"), None, Some("A")]));
        let exchange: ArrayRef = Arc::new(Int64Array::from(vec![1, 1, 1, 2]));
        let codes = vec![coder.codes(&left, true).unwrap(), coder.codes(&exchange, true).unwrap()];
        let groups = KeyGroups::new(&codes, 4, |row| row == 1);
        assert_eq!(groups.groups, vec![vec![0], vec![3]], "null keys and skipped rows join nothing");

        let keys = arrow_array::UInt32Array::from(vec![1, 0, 0, 2]);
        let values = Arc::new(StringArray::from(vec!["A", "B", "C"]));
        let right: ArrayRef = Arc::new(DictionaryArray::<UInt32Type>::try_new(keys, values).unwrap());
        let right_exchange: ArrayRef = Arc::new(Int64Array::from(vec![1, 1, 2, 1]));
        let codes = vec![coder.codes(&right, false).unwrap(), coder.codes(&right_exchange, false).unwrap()];
        let mut finder = groups.finder(codes);
        let found: Vec<_> = (0..4).map(|row| finder.group(row)).collect();
        assert_eq!(found, [None, Some(0), Some(1), None], "B has no group; C was never seen");
    }

    #[test]
    fn finds_groups_by_table_by_hash_and_across_runs() {
        // Second codes small (a table per run), large (hashed), and three keys.
        for (second, third) in [(vec![1, 2, 1, 2], None), (vec![5_000, 9, 5_000, 9], None), (vec![1, 2, 1, 2], Some(7))]
        {
            let mut coder = KeyCoder::default();
            let sym: ArrayRef = Arc::new(StringArray::from(vec!["A", "A", "B", "B"]));
            let second: ArrayRef = Arc::new(Int64Array::from(second));
            let mut columns = vec![sym, second];
            columns.extend(third.map(|t| Arc::new(Int64Array::from(vec![t; 4])) as ArrayRef));
            let codes: Vec<_> = columns.iter().map(|c| coder.codes(c, true).unwrap()).collect();
            let groups = KeyGroups::new(&codes, 4, |_| false);
            assert_eq!(groups.groups, vec![vec![0], vec![1], vec![2], vec![3]]);
            // The right side: A's second key twice, then a run of B with one key no
            // left row has, and a row of A again after B's run.
            let rows = [0, 1, 1, 2, 2, 3, 0];
            let codes: Vec<_> = codes.iter().map(|c| rows.iter().map(|r| c[*r]).collect::<Vec<_>>()).collect();
            let mut unknown = codes.clone();
            unknown[1][4] = 3;
            let mut finder = groups.finder(unknown);
            let found: Vec<_> = (0..rows.len()).map(|row| finder.group(row)).collect();
            assert_eq!(found, [Some(0), Some(1), Some(1), Some(2), None, Some(3), Some(0)]);
            let finder = groups.finder(codes);
            assert_eq!((finder.key_run_end(1, 7), finder.key_run_end(3, 7), finder.key_run_end(3, 4)), (3, 5, 4));
        }
    }

    #[test]
    fn a_dictionary_with_no_values_codes_every_row_absent() {
        // What an as-of join's left side is when its filter kept no rows.
        let mut coder = KeyCoder::default();
        let no_values = || Arc::new(StringArray::from(Vec::<&str>::new()));
        let empty: ArrayRef = Arc::new(
            DictionaryArray::<UInt32Type>::try_new(arrow_array::UInt32Array::from(Vec::<u32>::new()), no_values())
                .unwrap(),
        );
        assert_eq!(coder.codes(&empty, true).unwrap(), Vec::<u64>::new());
        let nulls = arrow_array::UInt32Array::from(vec![None, None]);
        let all_null: ArrayRef = Arc::new(DictionaryArray::<UInt32Type>::try_new(nulls, no_values()).unwrap());
        assert_eq!(coder.codes(&all_null, false).unwrap(), vec![ABSENT, ABSENT]);
    }

    #[test]
    fn no_key_columns_make_one_group() {
        let groups = KeyGroups::new(&[], 3, |_| false);
        assert_eq!(groups.groups, vec![vec![0, 1, 2]]);
        let mut finder = groups.finder(vec![]);
        assert_eq!(finder.group(7), Some(0));
    }
}
