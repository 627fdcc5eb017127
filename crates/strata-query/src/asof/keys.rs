//! Join keys as 64-bit codes, so rows of both sides compare as integers: strings
//! (plain or dictionary-encoded) by an interned id shared by both sides, numbers and
//! times by their bits. A dictionary's values are coded once, not per row.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
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
            t => return exec_err!("ASOF JOIN cannot use a {t} column as a key"),
        })
    }
}

/// The time column as `i64` values (nanoseconds, days, ... as stored). Null times
/// are `None`.
pub fn times(array: &ArrayRef) -> Result<Vec<Option<i64>>> {
    let t = array.data_type();
    if !(t.is_integer() || t.is_temporal()) {
        return exec_err!("ASOF JOIN needs an integer or temporal time column, not {t}");
    }
    let ints = cast(array, &DataType::Int64)?;
    Ok(ints.as_primitive::<Int64Type>().iter().collect())
}
