//! Hive-style Parquet for other engines: `dir/<table>/date=YYYY-MM-DD/part-0.parquet`,
//! one row group per symbol, so an engine that prunes row groups by their statistics
//! reads only the symbols a query asks for.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use strata_store::arrow::table_to_record_batch;
use strata_store::progress::{Progress, Unit};
use strata_store::{Date, StoreError, Table};

/// Writes `table` (sorted by `symbol_column`) to `dir/<name>/date=YYYY-MM-DD/part-0.parquet`
/// with one row group per run of equal symbols, zstd level 1. Returns the file.
/// `progress` hears one step in rows, advanced row group by row group.
pub fn write_hive(
    dir: &Path,
    name: &str,
    date: Date,
    table: &Table,
    symbol_column: &str,
    progress: &dyn Progress,
) -> Result<PathBuf, StoreError> {
    let (y, m, d) = date.ymd();
    let part_dir = dir.join(name).join(format!("date={y:04}-{m:02}-{d:02}"));
    fs::create_dir_all(&part_dir).map_err(|source| StoreError::Io { path: part_dir.clone(), source })?;
    let path = part_dir.join("part-0.parquet");
    let fail = |detail: String| StoreError::Invalid(format!("{}: {detail}", path.display()));
    let keys = table.column(symbol_column)?.values::<u32>().to_vec();
    let batch = table_to_record_batch(table)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level 1 exists")))
        // Row groups end where a symbol's rows end, never earlier.
        .set_max_row_group_row_count(None)
        .build();
    let file = File::create(&path).map_err(|source| StoreError::Io { path: path.clone(), source })?;
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| fail(e.to_string()))?;
    progress.start(&format!("writing {name} as Parquet"), keys.len() as u64, Unit::Rows);
    let mut start = 0;
    while start < keys.len() {
        let end = start + keys[start..].iter().take_while(|&&k| k == keys[start]).count();
        writer.write(&batch.slice(start, end - start)).map_err(|e| fail(e.to_string()))?;
        writer.flush().map_err(|e| fail(e.to_string()))?;
        progress.advance((end - start) as u64);
        start = end;
    }
    writer.close().map_err(|e| fail(e.to_string()))?;
    progress.finish();
    Ok(path)
}

#[cfg(test)]
mod tests {
    use parquet::file::reader::{FileReader, SerializedFileReader};

    use strata_store::progress::ProgressLog;

    use super::*;
    use crate::{TaqConfig, generate};

    #[test]
    fn one_row_group_per_symbol_and_the_table_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let config = TaqConfig { quotes: 3_000, trades: 300, syms: 12, ..TaqConfig::default() };
        let day = generate(&config);
        let log = ProgressLog::default();
        let path = write_hive(dir.path(), "trade", config.date, &day.trade, "Symbol", &log).unwrap();
        assert!(path.ends_with("trade/date=2022-03-31/part-0.parquet"), "{}", path.display());
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let keys = day.trade.column("Symbol").unwrap().values::<u32>();
        let mut distinct = keys.to_vec();
        distinct.dedup();
        assert_eq!(reader.metadata().num_row_groups(), distinct.len());
        let steps = log.complete_steps().unwrap();
        assert_eq!((steps[0].name.as_str(), steps[0].total), ("writing trade as Parquet", day.trade.len() as u64));
        assert_eq!(steps[0].advances.len(), distinct.len(), "one advance per row group");
        let back = strata_store::interchange::read_parquet(&path, &[]).unwrap();
        assert_eq!(back.len(), day.trade.len());
        assert_eq!(back.column("TradeId").unwrap().string(5), day.trade.column("TradeId").unwrap().string(5));
    }
}
