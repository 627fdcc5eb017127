//! CSV rendering (RFC 4180) of report tables.

use std::path::{Path, PathBuf};

use super::{Cell, Table};

/// The whole table as CSV text, header first, each line ending in `\n`.
pub(super) fn table_to_csv(table: &Table) -> String {
    let mut out = String::new();
    let header: Vec<String> = table.columns.iter().map(|c| escape(&c.name)).collect();
    out.push_str(&header.join(","));
    out.push('\n');
    for row in &table.rows {
        let fields: Vec<String> = row.iter().map(field).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// One cell as a CSV field: numbers in Rust's shortest round-trip form (so tools
/// read back exactly what was measured), non-finite numbers and empty cells blank.
fn field(cell: &Cell) -> String {
    match cell {
        Cell::Empty => String::new(),
        Cell::Number(v) if v.is_finite() => v.to_string(),
        Cell::Number(_) => String::new(),
        Cell::Text(text) => escape(text),
    }
}

/// Quotes a field that holds a comma, a double quote or a line break, doubling any
/// quotes inside; other fields are written as they are.
pub(super) fn escape(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

/// `dir/stem-slug.csv` for `path` = `dir/stem.ext`: where a report's second and later
/// tables go (see [`slug`]).
pub(super) fn sibling_path(path: &Path, title: &str) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "report".to_string());
    path.with_file_name(format!("{stem}-{}.csv", slug(title)))
}

/// The ASCII letters and digits of `title`, lower-cased, with single dashes
/// between words: for file names and HTML anchors.
pub(super) fn slug(title: &str) -> String {
    let mut slug = String::new();
    for ch in title.chars() {
        if ch.is_ascii_alphanumeric() {
            slug.push(ch.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Column;

    #[test]
    fn plain_fields_are_left_alone() {
        assert_eq!(escape("zstd:1"), "zstd:1");
        assert_eq!(escape(""), "");
        assert_eq!(escape("delta+shuffle+zstd:1"), "delta+shuffle+zstd:1");
    }

    #[test]
    fn commas_quotes_and_line_breaks_are_quoted() {
        assert_eq!(escape("a,b"), "\"a,b\"");
        assert_eq!(escape("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(escape("two\nlines"), "\"two\nlines\"");
        assert_eq!(escape("cr\r"), "\"cr\r\"");
        assert_eq!(escape("\""), "\"\"\"\"");
    }

    #[test]
    fn tables_keep_full_precision_and_blank_missing_values() {
        let mut table = Table::new("t", vec![Column::text("name, full"), Column::number("x", 1)]);
        table.push_row(vec!["a \"b\"".into(), 0.123456789.into()]);
        table.push_row(vec![Cell::Empty, f64::NAN.into()]);
        table.push_row(vec!["c".into(), 3.0.into()]);
        assert_eq!(table_to_csv(&table), "\"name, full\",x\n\"a \"\"b\"\"\",0.123456789\n,\nc,3\n");
    }

    #[test]
    fn sibling_paths_slug_the_title() {
        assert_eq!(
            sibling_path(Path::new("/tmp/out.csv"), "Summary: best vs zstd:1!"),
            PathBuf::from("/tmp/out-summary-best-vs-zstd-1.csv")
        );
        assert_eq!(sibling_path(Path::new("bench"), "x"), PathBuf::from("bench-x.csv"));
    }
}
