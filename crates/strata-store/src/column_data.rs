//! An in-memory column: the values of one column, laid out as on disk and in Arrow.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_buffer::{ArrowNativeType, Buffer, MutableBuffer};

use crate::error::{Result, StoreError};
use crate::types::ColumnType;

/// The distinct strings that symbol keys index into: the database's `sym` list for
/// columns read from disk, or a local list for columns built in memory.
pub type SymbolDomain = Arc<Vec<String>>;

/// The values of one column in memory.
///
/// Fixed-width values live in one Arrow [`Buffer`] in the on-disk byte layout, so a
/// plain column file maps straight into a `Column` without a copy. Strings keep
/// `len + 1` `i64` offsets (starting at 0) and a data buffer, Arrow's `LargeUtf8`
/// layout. Symbols are `u32` keys into a [`SymbolDomain`].
#[derive(Clone, Debug)]
pub struct Column {
    ty: ColumnType,
    len: usize,
    values: Buffer,
    offsets: Option<Buffer>,
    domain: Option<SymbolDomain>,
}

impl Column {
    /// A fixed-width column from typed values. `T` must have the type's width
    /// (`i64` for timestamps, `i32` for dates, `u8` for booleans and chars, ...);
    /// symbols and strings have their own constructors.
    pub fn from_values<T: ArrowNativeType>(ty: ColumnType, values: Vec<T>) -> Result<Column> {
        if matches!(ty, ColumnType::String | ColumnType::Symbol) || size_of::<T>() != ty.width() {
            return Err(StoreError::Invalid(format!(
                "a {ty} column cannot be built from {}-byte values",
                size_of::<T>()
            )));
        }
        let len = values.len();
        Ok(Column { ty, len, values: Buffer::from_vec(values), offsets: None, domain: None })
    }

    /// A fixed-width or symbol column over raw little-endian bytes (as read from a
    /// file). `bytes.len()` must be a multiple of the type's width.
    pub fn from_buffer(ty: ColumnType, values: Buffer, domain: Option<SymbolDomain>) -> Result<Column> {
        if ty == ColumnType::String || !values.len().is_multiple_of(ty.width()) {
            return Err(StoreError::Invalid(format!("{} bytes are not a whole number of {ty} values", values.len())));
        }
        if (ty == ColumnType::Symbol) != domain.is_some() {
            return Err(StoreError::Invalid(format!(
                "a {ty} column {} a symbol domain",
                if domain.is_some() { "cannot take" } else { "needs" }
            )));
        }
        let len = values.len() / ty.width();
        if let Some(domain) = &domain {
            let keys: &[u32] = values.typed_data();
            if let Some(row) = keys.iter().position(|k| *k as usize >= domain.len()) {
                return Err(StoreError::Invalid(format!(
                    "symbol key {} at row {row} is outside a domain of {} symbols",
                    keys[row],
                    domain.len()
                )));
            }
        }
        Ok(Column { ty, len, values, offsets: None, domain })
    }

    /// A string column over `len + 1` offsets (first 0, never decreasing, last equal
    /// to the data length) and UTF-8 data. The offsets are checked.
    pub fn from_string_buffers(offsets: Buffer, data: Buffer) -> Result<Column> {
        let offs: &[i64] = offsets.typed_data();
        let ok = offs.first() == Some(&0)
            && offs.windows(2).all(|w| w[0] <= w[1])
            && offs.last().map(|&l| l as usize) == Some(data.len());
        if !ok {
            return Err(StoreError::Invalid(format!(
                "string offsets must start at 0, never decrease and end at the data length {}",
                data.len()
            )));
        }
        let text =
            std::str::from_utf8(&data).map_err(|e| StoreError::Invalid(format!("string data is not UTF-8: {e}")))?;
        if let Some(row) = offs.iter().position(|&o| !text.is_char_boundary(o as usize)) {
            return Err(StoreError::Invalid(format!(
                "string offset {} (end of row {}) falls inside a UTF-8 character",
                offs[row],
                row.saturating_sub(1)
            )));
        }
        let len = offs.len() - 1;
        Ok(Column { ty: ColumnType::String, len, values: data, offsets: Some(offsets), domain: None })
    }

    /// A string column.
    pub fn from_strings<S: AsRef<str>>(strings: impl IntoIterator<Item = S>) -> Column {
        let mut offsets = vec![0i64];
        let mut data = Vec::new();
        for s in strings {
            data.extend_from_slice(s.as_ref().as_bytes());
            offsets.push(data.len() as i64);
        }
        let len = offsets.len() - 1;
        Column {
            ty: ColumnType::String,
            len,
            values: Buffer::from_vec(data),
            offsets: Some(Buffer::from_vec(offsets)),
            domain: None,
        }
    }

    /// A symbol column of keys into `domain`. Keys are checked against its length.
    pub fn from_symbol_keys(keys: Vec<u32>, domain: SymbolDomain) -> Result<Column> {
        Column::from_buffer(ColumnType::Symbol, Buffer::from_vec(keys), Some(domain))
    }

    /// A symbol column from strings, enumerated against a fresh local domain in order
    /// of first appearance.
    pub fn from_symbols<S: AsRef<str>>(symbols: impl IntoIterator<Item = S>) -> Column {
        let mut index = std::collections::HashMap::<String, u32>::new();
        let mut domain = Vec::new();
        let keys: Vec<u32> = symbols
            .into_iter()
            .map(|s| {
                let s = s.as_ref();
                *index.entry(s.to_string()).or_insert_with(|| {
                    domain.push(s.to_string());
                    (domain.len() - 1) as u32
                })
            })
            .collect();
        Column::from_symbol_keys(keys, Arc::new(domain)).expect("keys come from the domain")
    }

    /// The column's type.
    pub fn ty(&self) -> ColumnType {
        self.ty
    }

    /// Number of values (rows).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The fixed-width values as bytes (symbol keys for symbols, UTF-8 data for
    /// strings): what a column file stores.
    pub fn value_bytes(&self) -> &[u8] {
        &self.values
    }

    /// The underlying values buffer, shared not copied.
    pub fn values_buffer(&self) -> &Buffer {
        &self.values
    }

    /// The values as `T`, which must have the type's width. Panics otherwise: that is
    /// a programming error, not bad data.
    pub fn values<T: ArrowNativeType>(&self) -> &[T] {
        assert!(
            self.ty != ColumnType::String && size_of::<T>() == self.ty.width(),
            "{} values are not {}-byte",
            self.ty,
            size_of::<T>()
        );
        self.values.typed_data()
    }

    /// String offsets (`len + 1` values starting at 0), for string columns.
    pub fn offsets(&self) -> Option<&[i64]> {
        self.offsets.as_ref().map(|b| b.typed_data())
    }

    /// The offsets buffer, shared not copied, for string columns.
    pub fn offsets_buffer(&self) -> Option<&Buffer> {
        self.offsets.as_ref()
    }

    /// Bytes a write of the column hands to its files: the values, and the offsets
    /// of a string column (how table writes count their progress).
    pub(crate) fn written_bytes(&self) -> u64 {
        (self.values.len() + self.offsets.as_ref().map_or(0, Buffer::len)) as u64
    }

    /// The symbol domain, for symbol columns.
    pub fn domain(&self) -> Option<&SymbolDomain> {
        self.domain.as_ref()
    }

    /// Row `i` of a string column.
    pub fn string(&self, i: usize) -> &str {
        let offs = self.offsets().expect("a string column");
        let bytes = &self.values[offs[i] as usize..offs[i + 1] as usize];
        std::str::from_utf8(bytes).expect("checked UTF-8")
    }

    /// Row `i` of a symbol column.
    pub fn symbol(&self, i: usize) -> &str {
        let key = self.values::<u32>()[i];
        &self.domain.as_ref().expect("a symbol column")[key as usize]
    }

    /// Row `i` as a person reads it, in the text form CSV export writes and import
    /// reads: dates `2024-01-02`, timestamps `2024-01-02T09:30:00.000000000`,
    /// timespans `0D09:30:00.000000000`; a kdb+ null is empty.
    pub fn text(&self, i: usize) -> String {
        let mut out = String::new();
        crate::arrow::text::write_value(&mut out, self, i);
        out
    }

    /// Row `i` as display text (used by CSV export and error messages).
    pub fn display(&self, i: usize) -> String {
        macro_rules! show {
            ($t:ty) => {
                self.values::<$t>()[i].to_string()
            };
        }
        match self.ty {
            ColumnType::String => self.string(i).to_string(),
            ColumnType::Symbol => self.symbol(i).to_string(),
            ColumnType::Char => (self.values::<u8>()[i] as char).to_string(),
            ColumnType::Boolean | ColumnType::Byte => show!(u8),
            ColumnType::Short => show!(i16),
            ColumnType::Real => show!(f32),
            ColumnType::Float => show!(f64),
            _ if self.ty.width() == 4 => show!(i32),
            _ => show!(i64),
        }
    }

    /// The rows at `indices`, in that order (a gather).
    pub fn take(&self, indices: &[usize]) -> Column {
        if self.ty == ColumnType::String {
            return Column::from_strings(indices.iter().map(|&i| self.string(i)));
        }
        fn gather<T: ArrowNativeType>(values: &[T], indices: &[usize]) -> Buffer {
            Buffer::from_vec(indices.iter().map(|&i| values[i]).collect::<Vec<T>>())
        }
        let values = match self.ty.width() {
            1 => gather(self.values::<u8>(), indices),
            2 => gather(self.values::<u16>(), indices),
            4 => gather(self.values::<u32>(), indices),
            _ => gather(self.values::<u64>(), indices),
        };
        Column { ty: self.ty, len: indices.len(), values, offsets: None, domain: self.domain.clone() }
    }

    /// Rows `start..start + len`, sharing the buffers (strings are re-based).
    pub fn slice(&self, start: usize, len: usize) -> Column {
        assert!(start + len <= self.len, "rows {start}..{} of {}", start + len, self.len);
        if self.ty == ColumnType::String {
            return Column::from_strings((start..start + len).map(|i| self.string(i)));
        }
        let w = self.ty.width();
        Column {
            ty: self.ty,
            len,
            values: self.values.slice_with_length(start * w, len * w),
            offsets: None,
            domain: self.domain.clone(),
        }
    }

    /// This column followed by `other` (same type; symbols are re-keyed into this
    /// column's domain, extended with any new symbols).
    pub fn concat(&self, other: &Column) -> Result<Column> {
        if self.ty != other.ty {
            return Err(StoreError::Invalid(format!("cannot append a {} column to a {} column", other.ty, self.ty)));
        }
        match self.ty {
            ColumnType::String => Ok(Column::from_strings(
                (0..self.len).map(|i| self.string(i)).chain((0..other.len).map(|i| other.string(i))),
            )),
            ColumnType::Symbol => Ok(Column::from_symbols(
                (0..self.len).map(|i| self.symbol(i)).chain((0..other.len).map(|i| other.symbol(i))),
            )),
            _ => {
                let mut bytes = MutableBuffer::with_capacity(self.values.len() + other.values.len());
                bytes.extend_from_slice(&self.values);
                bytes.extend_from_slice(&other.values);
                Column::from_buffer(self.ty, bytes.into(), None)
            }
        }
    }

    /// A comparison of two rows by value: numbers numerically (floats by total
    /// order), symbols and strings by their text. Built once per column so sorting
    /// does not dispatch on type per comparison.
    pub fn row_order(&self) -> Box<dyn Fn(usize, usize) -> Ordering + Sync + '_> {
        macro_rules! by {
            ($t:ty) => {{
                let v = self.values::<$t>();
                Box::new(move |a, b| v[a].cmp(&v[b]))
            }};
        }
        match self.ty {
            ColumnType::String => Box::new(move |a, b| self.string(a).cmp(self.string(b))),
            ColumnType::Symbol => {
                let domain = self.domain.as_ref().expect("symbol domain");
                let mut order: Vec<u32> = (0..domain.len() as u32).collect();
                order.sort_by(|a, b| domain[*a as usize].cmp(&domain[*b as usize]));
                let mut rank = vec![0u32; domain.len()];
                for (r, key) in order.into_iter().enumerate() {
                    rank[key as usize] = r as u32;
                }
                let keys = self.values::<u32>();
                Box::new(move |a, b| rank[keys[a] as usize].cmp(&rank[keys[b] as usize]))
            }
            ColumnType::Real => {
                let v = self.values::<f32>();
                Box::new(move |a, b| v[a].total_cmp(&v[b]))
            }
            ColumnType::Float => {
                let v = self.values::<f64>();
                Box::new(move |a, b| v[a].total_cmp(&v[b]))
            }
            ColumnType::Boolean | ColumnType::Byte | ColumnType::Char => by!(u8),
            ColumnType::Short => by!(i16),
            _ if self.ty.width() == 4 => by!(i32),
            _ => by!(i64),
        }
    }

    /// Row `i`'s raw value bits (zero-extended), which identify equal values of
    /// fixed-width and symbol columns. `None` for strings.
    pub fn value_bits(&self, i: usize) -> Option<u64> {
        Some(match self.ty.width() {
            _ if self.ty == ColumnType::String => return None,
            1 => self.values::<u8>()[i] as u64,
            2 => self.values::<u16>()[i] as u64,
            4 => self.values::<u32>()[i] as u64,
            _ => self.values::<u64>()[i],
        })
    }
}

impl PartialEq for Column {
    /// Columns are equal when type and values are; symbols compare by text, so the
    /// same symbols under different domains are equal.
    fn eq(&self, other: &Column) -> bool {
        if self.ty != other.ty || self.len != other.len {
            return false;
        }
        match self.ty {
            ColumnType::Symbol => (0..self.len).all(|i| self.symbol(i) == other.symbol(i)),
            ColumnType::String => self.offsets() == other.offsets() && self.values == other.values,
            _ => self.values.as_slice() == other.values.as_slice(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_must_match_the_type() {
        assert!(Column::from_values(ColumnType::Timestamp, vec![1i64, 2]).is_ok());
        assert!(Column::from_values(ColumnType::Timestamp, vec![1i32, 2]).is_err());
        assert!(Column::from_values(ColumnType::Symbol, vec![1u32]).is_err());
    }

    #[test]
    fn text_shows_temporal_values_as_dates_and_times() {
        let day = crate::Date::from_ymd(2022, 3, 31).unwrap();
        let dates = Column::from_values(ColumnType::Date, vec![day.0, i32::MIN]).unwrap();
        assert_eq!((dates.text(0).as_str(), dates.text(1).as_str()), ("2022-03-31", ""));
        let bar = 10_355_000_000_000i64 * 3;
        let spans = Column::from_values(ColumnType::Timespan, vec![bar]).unwrap();
        assert_eq!(spans.text(0), "0D08:37:45.000000000");
        assert_eq!(spans.display(0), bar.to_string(), "display stays the stored number");
    }

    #[test]
    fn symbols_sort_by_text_not_by_key() {
        let col = Column::from_symbols(["MSFT", "AAPL", "IBM", "AAPL"]);
        let order = col.row_order();
        let mut rows: Vec<usize> = (0..4).collect();
        rows.sort_by(|a, b| order(*a, *b));
        let sorted = col.take(&rows);
        assert_eq!((0..4).map(|i| sorted.symbol(i)).collect::<Vec<_>>(), ["AAPL", "AAPL", "IBM", "MSFT"]);
        assert_eq!(rows, [1, 3, 2, 0], "stable: equal keys keep their order");
    }

    #[test]
    fn strings_take_slice_and_concat() {
        let col = Column::from_strings(["a", "", "ccc"]);
        assert_eq!(col.take(&[2, 0]).string(0), "ccc");
        assert_eq!(col.slice(1, 2).string(1), "ccc");
        let both = col.concat(&Column::from_strings(["d"])).unwrap();
        assert_eq!(both.len(), 4);
        assert_eq!(both.string(3), "d");
        assert!(
            Column::from_string_buffers(Buffer::from_vec(vec![0i64, 5]), Buffer::from_vec(b"abc".to_vec())).is_err()
        );
        let split_char =
            Column::from_string_buffers(Buffer::from_vec(vec![0i64, 1, 2]), Buffer::from_vec("é".as_bytes().to_vec()));
        assert!(split_char.unwrap_err().to_string().contains("inside a UTF-8 character"));
    }
}
