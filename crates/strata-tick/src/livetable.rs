//! One of the RDB's tables: today's rows, appended update by update and queried with
//! SQL while they grow.
//!
//! New rows go into column builders (the values as Strata stores them: little-endian,
//! Unix epoch, symbols as keys of the RDB's [`SymbolTable`]), a byte copy per column
//! per update. Before a query, [`LiveTable::seal`] turns the builders into a chunk
//! (Strata columns sharing the builders' memory) and hands it to the SQL engine's
//! [`MemoryTable`] as an Arrow batch without a copy. Chunks are merged so that each is
//! at least twice the size of the next: a table has O(log rows) chunks and each row is
//! copied O(log rows) times however often it is queried.
//!
//! The table declares itself sorted by `time` to the engine only while every row
//! so far arrived in time order (always so when the tickerplant stamps the rows).

use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};
use strata_ipc::value::{EPOCH_OFFSET_DAYS, EPOCH_OFFSET_MONTHS, EPOCH_OFFSET_NANOS};
use strata_query::MemoryTable;
use strata_query::memory::table_batch;
use strata_store::{Column, ColumnType, SymbolDomain, Table};

use crate::growing::GrowingBuffer;
use crate::schema::{ColumnKind, TableSchema};
use crate::symbols::SymbolTable;
use crate::update::WireColumns;

/// Rows not yet sealed, as Strata will hold them, in buffers that grow in place
/// (see [`crate::growing`]).
enum Builder {
    /// Little-endian values of a fixed-width type.
    Fixed(ColumnType, GrowingBuffer),
    /// `u32` keys into the RDB's symbol table.
    Symbol(GrowingBuffer),
    /// `i64` end offsets after a leading 0 (written with the first text), and UTF-8
    /// bytes.
    Strings(GrowingBuffer, GrowingBuffer),
}

impl Builder {
    fn new(ty: ColumnType) -> Builder {
        match ty {
            ColumnType::Symbol => Builder::Symbol(GrowingBuffer::new()),
            ColumnType::String => Builder::Strings(GrowingBuffer::new(), GrowingBuffer::new()),
            ty => Builder::Fixed(ty, GrowingBuffer::new()),
        }
    }

    /// Appends one column of an update of `rows` rows (see [`WireColumns`] for the
    /// bytes).
    fn append(&mut self, bytes: &[u8], rows: usize, symbols: &mut SymbolTable) {
        match self {
            Builder::Fixed(ColumnType::Timestamp, values) => shifted::<i64>(values, bytes, EPOCH_OFFSET_NANOS),
            Builder::Fixed(ColumnType::Date, values) => shifted::<i32>(values, bytes, EPOCH_OFFSET_DAYS),
            Builder::Fixed(ColumnType::Month, values) => shifted::<i32>(values, bytes, EPOCH_OFFSET_MONTHS),
            Builder::Fixed(_, values) => values.extend_from_slice(bytes),
            Builder::Symbol(keys) => {
                keys.reserve(rows * size_of::<u32>());
                symbols.keys(bytes).for_each(|key| keys.push(key));
            }
            Builder::Strings(offsets, data) => {
                if offsets.is_empty() {
                    offsets.push(0i64);
                }
                offsets.reserve(rows * size_of::<i64>());
                // The wire bytes hold the texts and a 6-byte header each.
                data.reserve(bytes.len());
                let mut rest = bytes;
                while rest.len() >= 6 {
                    let len = u32::from_le_bytes(rest[2..6].try_into().expect("4 bytes")) as usize;
                    let text = &rest[6..6 + len];
                    match std::str::from_utf8(text) {
                        Ok(_) => data.extend_from_slice(text),
                        Err(_) => data.extend_from_slice(String::from_utf8_lossy(text).as_bytes()),
                    }
                    offsets.push(data.len() as i64);
                    rest = &rest[6 + len..];
                }
            }
        }
    }

    /// The rows so far as a column over the builder's memory, leaving the builder
    /// empty.
    fn take(&mut self, domain: &SymbolDomain) -> Column {
        let column = match self {
            Builder::Fixed(ty, values) => Column::from_buffer(*ty, std::mem::take(values).into_buffer(), None),
            Builder::Symbol(keys) => {
                Column::from_buffer(ColumnType::Symbol, std::mem::take(keys).into_buffer(), Some(domain.clone()))
            }
            Builder::Strings(offsets, data) => {
                let offsets = match std::mem::take(offsets) {
                    none if none.is_empty() => Buffer::from_vec(vec![0i64]),
                    offsets => offsets.into_buffer(),
                };
                Column::from_string_buffers(offsets, std::mem::take(data).into_buffer())
            }
        };
        column.expect("builders hold whole values of their type")
    }
}

/// Moves values from kdb+'s 2000.01.01 epoch to the Unix epoch; nulls and
/// infinities (the extreme values) mean the same in both and stay.
fn shifted<T: WireInt>(values: &mut GrowingBuffer, bytes: &[u8], offset: T) {
    values.reserve(bytes.len());
    for chunk in bytes.chunks_exact(size_of::<T>()) {
        let v = T::from_le(chunk);
        values.push(if v.is_sentinel() { v } else { v.add(offset) });
    }
}

/// The integer widths temporal values come in.
trait WireInt: arrow_buffer::ArrowNativeType + Copy {
    fn from_le(bytes: &[u8]) -> Self;
    fn is_sentinel(self) -> bool;
    fn add(self, other: Self) -> Self;
}

macro_rules! wire_int {
    ($($t:ty),*) => {$(
        impl WireInt for $t {
            fn from_le(bytes: &[u8]) -> $t {
                <$t>::from_le_bytes(bytes.try_into().expect("caller passes the width"))
            }
            fn is_sentinel(self) -> bool {
                self == <$t>::MIN || self == <$t>::MAX || self == -<$t>::MAX
            }
            fn add(self, other: $t) -> $t {
                self.wrapping_add(other)
            }
        }
    )*};
}

wire_int!(i32, i64);

/// The store type of a schema column.
pub fn column_type(kind: ColumnKind) -> ColumnType {
    match kind {
        ColumnKind::Strings => ColumnType::String,
        ColumnKind::Vector(code) => ColumnType::from_code(code).expect("schemas hold Strata column types"),
    }
}

fn empty_builders(schema: &TableSchema) -> Vec<Builder> {
    schema.kinds.iter().map(|k| Builder::new(column_type(*k))).collect()
}

/// A table growing through the day, queryable with SQL.
pub struct LiveTable {
    schema: TableSchema,
    tail: Vec<Builder>,
    tail_rows: usize,
    /// Sealed rows, oldest first, each chunk at least twice the size of the next.
    chunks: Vec<Table>,
    sealed_rows: usize,
    memory: Arc<MemoryTable>,
    /// Whether `memory` claims the time order.
    declares_order: bool,
    /// Whether `memory` has not been handed to the engine yet.
    fresh: bool,
    /// Every row so far arrived in time order.
    in_time_order: bool,
    last_time: i64,
}

impl LiveTable {
    /// An empty table of `schema`.
    pub fn new(schema: TableSchema) -> LiveTable {
        let tail = empty_builders(&schema);
        let mut table = LiveTable {
            schema,
            tail,
            tail_rows: 0,
            chunks: Vec::new(),
            sealed_rows: 0,
            memory: Arc::new(MemoryTable::new(Arc::new(arrow_schema::Schema::empty()))),
            declares_order: false,
            fresh: true,
            in_time_order: true,
            last_time: i64::MIN,
        };
        table.replace_memory();
        table
    }

    /// The schema.
    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.sealed_rows + self.tail_rows
    }

    /// Whether no rows are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends an update's columns (checked against the schema).
    pub fn append(&mut self, columns: &WireColumns, symbols: &mut SymbolTable) {
        if self.in_time_order {
            // The time column (timespan or timestamp) is 8-byte values either way.
            let mut last = self.last_time;
            for chunk in columns.column(0).chunks_exact(8) {
                let t = i64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                if t < last {
                    self.in_time_order = false;
                    break;
                }
                last = t;
            }
            self.last_time = last;
        }
        for (i, builder) in self.tail.iter_mut().enumerate() {
            builder.append(columns.column(i), columns.rows(), symbols);
        }
        self.tail_rows += columns.rows();
    }

    /// Makes every row visible to SQL (through [`LiveTable::provider`]).
    pub fn seal(&mut self, symbols: &mut SymbolTable) {
        let reorder = self.declares_order && !self.in_time_order;
        let mut rebuild = reorder;
        if self.tail_rows > 0 {
            let chunk = self.take_tail(symbols);
            self.sealed_rows += chunk.len();
            self.chunks.push(chunk);
            while let [.., older, newer] = self.chunks.as_slice()
                && older.len() < 2 * newer.len()
            {
                let newer = self.chunks.pop().expect("two chunks");
                let older = self.chunks.pop().expect("two chunks");
                self.chunks.push(concat(&[older, newer], &symbols.domain()));
                rebuild = true;
            }
            if !rebuild {
                let last = self.chunks.last().expect("just pushed");
                self.memory.append(batch(last)).expect("chunks have the table's schema");
            }
        }
        if rebuild {
            self.memory.clear();
            if reorder {
                self.replace_memory();
            }
            for chunk in &self.chunks {
                self.memory.append(batch(chunk)).expect("chunks have the table's schema");
            }
        }
    }

    /// The table's SQL provider when the engine must (re)register it: the first
    /// time, after end of day, and when rows stop arriving in time order (the new
    /// provider no longer claims that order). `None` while the registered one holds.
    pub fn new_provider(&mut self) -> Option<Arc<MemoryTable>> {
        std::mem::take(&mut self.fresh).then(|| self.memory.clone())
    }

    /// Every row as one Strata table (sealed first).
    pub fn to_table(&mut self, symbols: &mut SymbolTable) -> Table {
        self.seal(symbols);
        match self.chunks.as_slice() {
            [] => self.empty_table(),
            chunks => concat(chunks, &symbols.domain()),
        }
    }

    /// Every row as one Strata table (as [`LiveTable::to_table`]), which the table
    /// then holds in place of its chunks, so the copy costs no memory beside them: end
    /// of day writes it while queries keep reading the same buffers.
    pub fn consolidate(&mut self, symbols: &mut SymbolTable) -> Table {
        let whole = self.to_table(symbols);
        if self.chunks.len() > 1 {
            self.chunks = vec![whole.clone()];
            self.memory.clear();
            self.memory.append(batch(&whole)).expect("the table has the table's schema");
        }
        whole
    }

    /// Takes every row out (end of day), leaving the table empty with a new SQL
    /// provider to register.
    pub fn take(&mut self, symbols: &mut SymbolTable) -> Table {
        let rows = self.to_table(symbols);
        self.clear();
        rows
    }

    /// Drops every row, leaving the table empty with a new SQL provider to register
    /// (end of day, once the day is served elsewhere).
    pub fn clear(&mut self) {
        self.tail = empty_builders(&self.schema);
        self.tail_rows = 0;
        self.chunks.clear();
        self.sealed_rows = 0;
        self.in_time_order = true;
        self.last_time = i64::MIN;
        self.memory.clear();
        self.replace_memory();
    }

    fn take_tail(&mut self, symbols: &mut SymbolTable) -> Table {
        let domain = symbols.domain();
        let columns = self.schema.columns.iter().cloned().zip(self.tail.iter_mut().map(|b| b.take(&domain))).collect();
        self.tail_rows = 0;
        Table::new(columns).expect("builders grow together")
    }

    /// A new, empty SQL provider, claiming time order while that holds.
    fn replace_memory(&mut self) {
        let memory = MemoryTable::new(batch(&self.empty_table()).schema());
        self.declares_order = self.in_time_order;
        self.memory = Arc::new(if self.declares_order {
            memory.with_sort_order(&["time"]).expect("every table has a time column")
        } else {
            memory
        });
        self.fresh = true;
    }

    fn empty_table(&self) -> Table {
        let domain: SymbolDomain = Arc::new(Vec::new());
        let columns = self
            .schema
            .columns
            .iter()
            .zip(&self.schema.kinds)
            .map(|(name, kind)| (name.clone(), Builder::new(column_type(*kind)).take(&domain)))
            .collect();
        Table::new(columns).expect("empty columns")
    }
}

/// A chunk as the Arrow batch SQL reads (sharing its buffers).
fn batch(chunk: &Table) -> arrow_array::RecordBatch {
    table_batch(chunk).expect("RDB columns convert to Arrow")
}

/// Chunks of one table as one table. Symbol keys index one growing symbol table, so
/// the newest `domain` covers every chunk.
fn concat(chunks: &[Table], domain: &SymbolDomain) -> Table {
    let first = match chunks {
        [] => unreachable!("callers pass at least one chunk or use the empty table"),
        [one] => return one.clone(),
        [first, ..] => first,
    };
    let columns = (0..first.names().len())
        .map(|i| {
            let parts: Vec<&Column> = chunks.iter().map(|c| &c.columns()[i]).collect();
            let ty = parts[0].ty();
            let column = match ty {
                ColumnType::String => {
                    let mut offsets = vec![0i64];
                    let mut data = Vec::new();
                    for part in &parts {
                        let base = data.len() as i64;
                        offsets.extend(part.offsets().expect("string offsets")[1..].iter().map(|o| o + base));
                        data.extend_from_slice(part.value_bytes());
                    }
                    Column::from_string_buffers(Buffer::from_vec(offsets), Buffer::from_vec(data))
                }
                _ => {
                    let mut values = MutableBuffer::with_capacity(parts.iter().map(|p| p.value_bytes().len()).sum());
                    parts.iter().for_each(|p| values.extend_from_slice(p.value_bytes()));
                    let domain = (ty == ColumnType::Symbol).then(|| domain.clone());
                    Column::from_buffer(ty, values.into(), domain)
                }
            };
            (first.names()[i].clone(), column.expect("chunks of one table"))
        })
        .collect();
    Table::new(columns).expect("chunks of one table")
}

#[cfg(test)]
mod tests {
    use strata_ipc::view::view;
    use strata_ipc::{Atom, K, to_bytes};

    use super::*;
    use crate::schema::Schema;

    fn schema() -> TableSchema {
        Schema::parse("s", "t time:timespan sym:symbol px:float note:string day:date\n").unwrap().tables.remove(0)
    }

    fn row(time: i64, sym: &str, px: f64) -> WireColumns {
        let data = K::List(vec![
            K::Atom(Atom::Timespan(time)),
            K::symbol(sym),
            K::Atom(Atom::Float(px)),
            K::string(&format!("n{px}")),
            K::Atom(Atom::Date(0)),
        ]);
        let bytes = to_bytes(&data);
        let mut columns = WireColumns::new(5);
        columns.append_update(&schema(), &view(&bytes).unwrap(), 0).unwrap();
        columns
    }

    #[test]
    fn sealed_rows_reach_sql_in_few_chunks() {
        let mut table = LiveTable::new(schema());
        let mut symbols = SymbolTable::default();
        assert!(table.new_provider().is_some(), "registered once at start");
        assert!(table.new_provider().is_none());
        for i in 0..100 {
            table.append(&row(i, ["A", "B", "C"][i as usize % 3], i as f64), &mut symbols);
            table.seal(&mut symbols);
            assert!(table.chunks.len() <= 8, "{} chunks after {} rows", table.chunks.len(), i + 1);
        }
        assert_eq!((table.len(), table.memory.rows()), (100, 100));
        assert!(table.new_provider().is_none(), "the registered provider still holds");
        let all = table.to_table(&mut symbols);
        assert_eq!(all.column("time").unwrap().values::<i64>(), (0..100).collect::<Vec<_>>());
        assert_eq!(all.column("sym").unwrap().symbol(4), "B");
        assert_eq!(all.column("note").unwrap().string(7), "n7");
        assert_eq!(all.column("day").unwrap().values::<i32>()[0], EPOCH_OFFSET_DAYS, "2000.01.01 in Unix days");
        assert!(table.declares_order);
    }

    #[test]
    fn order_is_claimed_only_while_true_and_end_of_day_empties() {
        let mut table = LiveTable::new(schema());
        let mut symbols = SymbolTable::default();
        table.new_provider();
        table.append(&row(10, "A", 1.0), &mut symbols);
        table.seal(&mut symbols);
        table.append(&row(5, "B", 2.0), &mut symbols);
        table.seal(&mut symbols);
        let provider = table.new_provider().expect("a new provider without the time order");
        assert!(!table.declares_order);
        assert_eq!(provider.rows(), 2);
        let day = table.take(&mut symbols);
        assert_eq!(day.len(), 2);
        assert_eq!((table.len(), provider.rows()), (0, 0), "the old provider is emptied too");
        let fresh = table.new_provider().expect("a fresh provider for the new day");
        assert!(table.declares_order && fresh.rows() == 0);
        assert_eq!(table.to_table(&mut symbols).len(), 0);
    }

    #[test]
    fn end_of_day_consolidates_into_the_table_it_writes_and_keeps_serving_it() {
        let mut table = LiveTable::new(schema());
        let mut symbols = SymbolTable::default();
        table.new_provider();
        for i in 0..37 {
            table.append(&row(i, ["A", "B"][i as usize % 2], i as f64), &mut symbols);
            table.seal(&mut symbols);
        }
        assert!(table.chunks.len() > 1);
        let day = table.consolidate(&mut symbols);
        assert_eq!((day.len(), table.chunks.len(), table.memory.rows()), (37, 1, 37), "one copy, still served");
        assert_eq!(table.to_table(&mut symbols), day);
        assert!(table.new_provider().is_none(), "the registered provider holds the same rows");
        table.clear();
        assert_eq!((table.len(), table.memory.rows()), (0, 0));
    }
}
