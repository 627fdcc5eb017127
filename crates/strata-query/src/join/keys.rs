//! Join keys as 64-bit codes, so rows of both sides compare as integers: strings
//! (plain or dictionary-encoded) by an interned id shared by both sides, numbers and
//! times by their bits. A dictionary's values are coded once, not per row.
//! [`KeyGroups`] groups the left side's rows by key; a [`GroupFinder`] finds the
//! group of each right row.

use std::collections::{HashMap, HashSet};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, IntervalMonthDayNanoType};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, IntervalUnit};
use datafusion::arrow::compute::cast;
use datafusion::common::{Result, exec_err};

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
        let valid = |i: usize| array.is_valid(i);
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
    let ints = cast(array, &DataType::Int64)?;
    Ok(ints.as_primitive::<Int64Type>().iter().collect())
}

/// Nanoseconds in a day, to count intervals of days.
const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// The rows of one side grouped by their key codes.
#[derive(Debug, Default)]
pub struct KeyGroups {
    /// Each group's rows, ascending.
    pub groups: Vec<Vec<u32>>,
    by_key: HashMap<Vec<u64>, u32>,
    /// The first key column's codes that some group has, to skip other rows with
    /// one lookup.
    first_codes: HashSet<u64>,
}

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
            let g = *grouped.by_key.entry(key.clone()).or_insert(next);
            if g == next {
                grouped.groups.push(Vec::new());
                grouped.first_codes.insert(key.first().copied().unwrap_or(0));
            }
            grouped.groups[g as usize].push(row as u32);
        }
        grouped
    }

    /// A finder for the groups of another batch's rows, given their key codes
    /// (coded by the same [`KeyCoder`], in the same column order).
    pub fn finder(&self, codes: Vec<Vec<u64>>) -> GroupFinder<'_> {
        GroupFinder { groups: self, codes, run_code: ABSENT, run_known: false, run_group: None, key: Vec::new() }
    }
}

/// Finds the group of each row of one batch. Inputs sorted by key come in runs of
/// one first-key code: each run is looked up once.
pub struct GroupFinder<'a> {
    groups: &'a KeyGroups,
    codes: Vec<Vec<u64>>,
    run_code: u64,
    run_known: bool,
    run_group: Option<Option<u32>>,
    key: Vec<u64>,
}

impl GroupFinder<'_> {
    /// The group `row` belongs to, if any.
    pub fn group(&mut self, row: usize) -> Option<usize> {
        let code = self.codes.first().map_or(0, |c| c[row]);
        if code != self.run_code {
            self.run_code = code;
            self.run_known = code != ABSENT && self.groups.first_codes.contains(&code);
            self.run_group = None;
        }
        if !self.run_known {
            return None;
        }
        if self.codes.len() <= 1 {
            let groups = self.groups;
            let codes = &self.codes;
            let g = *self.run_group.get_or_insert_with(|| {
                let key: Vec<u64> = codes.first().map(|_| vec![code]).unwrap_or_default();
                groups.by_key.get(&key).copied()
            });
            return g.map(|g| g as usize);
        }
        self.key.clear();
        self.key.extend(self.codes.iter().map(|c| c[row]));
        self.groups.by_key.get(&self.key).map(|g| *g as usize)
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
