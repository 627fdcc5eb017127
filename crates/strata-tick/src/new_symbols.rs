//! A bound on the distinct symbols each publisher may add in a day. Every symbol a
//! tickerplant accepts ends in the sym file at end of day, which every HDB loads
//! whole and keeps: a feed gone wrong (or hostile) that sends 10 million distinct
//! symbols made a 118 MB sym file, a 27 s HDB reload and 3.2 GB of HDB memory.
//! So the tickerplant counts, per publisher (user and address) and day, the symbols
//! it introduces that no update of the day has carried yet, and refuses, before
//! journaling, an update that would take it past the bound: nothing acknowledged
//! is dropped, a sync caller gets the error, and refusals are counted
//! (`symbolsRefused` in `.strata.counters[]`).

use std::collections::{HashMap, HashSet};

use crate::schema::{ColumnKind, TableSchema};
use crate::update::WireColumns;

/// New symbols one publisher may add in a day unless told otherwise: far more than
/// an equity feed's (about 10,000 for US TAQ), near an options feed's; an OPRA
/// feed needs `--max-new-symbols` raised.
pub const DEFAULT_MAX_NEW_SYMBOLS: usize = 1_000_000;

/// kdb+'s type number of a symbol vector.
const SYMBOL: u8 = 11;

/// The symbols seen today and what each publisher added.
#[derive(Debug, Default)]
pub struct NewSymbols {
    /// The bound per publisher and day (`None`: no bound).
    limit: Option<usize>,
    seen: HashSet<Box<[u8]>>,
    added: HashMap<String, usize>,
    /// Updates refused for passing the bound.
    pub refused: u64,
}

impl NewSymbols {
    /// Counts against `limit` new symbols per publisher and day.
    pub fn new(limit: Option<usize>) -> NewSymbols {
        NewSymbols { limit, ..NewSymbols::default() }
    }

    /// A new day: every publisher starts again.
    pub fn new_day(&mut self) {
        self.seen.clear();
        self.added.clear();
    }

    /// Takes the symbols of `update` (of table `schema`) from publisher `who`, or
    /// refuses the update (taking none) when they would pass its bound.
    pub fn admit(&mut self, who: &str, schema: &TableSchema, update: &WireColumns) -> Result<(), String> {
        let Some(limit) = self.limit else { return Ok(()) };
        let mut fresh: HashSet<&[u8]> = HashSet::new();
        for (i, kind) in schema.kinds.iter().enumerate() {
            if *kind != ColumnKind::Vector(SYMBOL) {
                continue;
            }
            // A symbol repeated row after row (a batch of one name's quotes) is looked
            // up once.
            let mut last: &[u8] = &[];
            for symbol in update.column(i).split(|b| *b == 0).filter(|s| !s.is_empty()) {
                if symbol != last && !self.seen.contains(symbol) {
                    fresh.insert(symbol);
                }
                last = symbol;
            }
        }
        if fresh.is_empty() {
            return Ok(());
        }
        let added = self.added.get(who).copied().unwrap_or(0);
        if added + fresh.len() > limit {
            self.refused += 1;
            return Err(format!(
                "upd: {who} has added {added} new symbols today and this update brings {} more, past the {limit} a \
                 publisher may add in a day (the tickerplant's --max-new-symbols); the update is refused",
                fresh.len()
            ));
        }
        *self.added.entry(who.to_string()).or_default() += fresh.len();
        self.seen.extend(fresh.into_iter().map(Box::from));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_ipc::{K, Vector};

    fn schema() -> TableSchema {
        crate::schema::Schema::parse("sym", "trade time:timespan sym:symbol price:float\n").unwrap().tables.remove(0)
    }

    fn update(syms: &[&str]) -> WireColumns {
        let schema = schema();
        let data = K::List(vec![
            K::vector(Vector::Symbol(syms.iter().map(|s| s.to_string()).collect())),
            K::vector(Vector::Float(vec![1.0; syms.len()])),
        ]);
        let mut bytes = Vec::new();
        strata_ipc::encode(&data, &mut bytes);
        let view = strata_ipc::view::view(&bytes).unwrap();
        let mut columns = WireColumns::new(schema.columns.len());
        columns.append_update(&schema, &view, 0).unwrap();
        columns
    }

    #[test]
    fn a_publisher_past_its_bound_is_refused_and_others_and_known_symbols_are_not() {
        let schema = schema();
        let mut symbols = NewSymbols::new(Some(3));
        symbols.admit("feed@10.0.0.1", &schema, &update(&["A", "B", "A"])).unwrap();
        let err = symbols.admit("feed@10.0.0.1", &schema, &update(&["C", "D"])).unwrap_err();
        assert!(err.contains("feed@10.0.0.1") && err.contains("--max-new-symbols"), "{err}");
        assert_eq!(symbols.refused, 1);
        // Nothing of the refused update was taken: one more new symbol still fits.
        symbols.admit("feed@10.0.0.1", &schema, &update(&["C", "A", "B"])).unwrap();
        // Symbols another publisher added cost nothing; its own new ones count for it.
        symbols.admit("other@10.0.0.2", &schema, &update(&["A", "D", "E"])).unwrap();
        symbols.new_day();
        symbols.admit("feed@10.0.0.1", &schema, &update(&["X", "Y", "Z"])).unwrap();
    }
}
