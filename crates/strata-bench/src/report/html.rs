//! The self-contained HTML page: inline CSS, tables with heat-map colours, inline SVG.

use std::collections::HashMap;
use std::fmt::Write;

use super::{Heat, Report, Section, Table};

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}\
table{border-collapse:collapse;font-size:.9em}\
th,td{border:1px solid #ccc;padding:.25em .6em}\
th{background:#f0f0f0;position:sticky;top:0}\
td.num{text-align:right;font-variant-numeric:tabular-nums}\
.chart{display:block;margin:1em 0}\
p.legend{color:#666;font-size:.85em}";

/// Escapes text for HTML and SVG (element content and quoted attributes).
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// The whole report as one HTML document.
pub(super) fn page(report: &Report) -> String {
    let title = escape(&report.title);
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
    );
    let mut coloured = false;
    for section in &report.sections {
        match section {
            Section::Note(text) => {
                let _ = writeln!(html, "<p>{}</p>", escape(text));
            }
            Section::Table(table) => {
                coloured |= table.columns.iter().any(|c| c.heat != Heat::Off);
                html.push_str(&table_html(table));
            }
            Section::Chart(chart) => {
                let _ = writeln!(html, "<h2>{}</h2>\n{}", escape(&chart.title), chart.to_svg());
            }
        }
    }
    if coloured {
        html.push_str(
            "<p class=\"legend\">Colours: green is the best value of a column, red the worst \
             (within each group of rows where the table is grouped); the scale is logarithmic \
             when all values are positive.</p>\n",
        );
    }
    html.push_str("</body>\n</html>\n");
    html
}

fn table_html(table: &Table) -> String {
    let colours = heat_colours(table);
    let mut html = format!("<h2>{}</h2>\n<table>\n<thead><tr>", escape(&table.title));
    for column in &table.columns {
        let _ = write!(html, "<th>{}</th>", escape(&column.name));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for (r, _) in table.rows.iter().enumerate() {
        html.push_str("<tr>");
        for (c, column) in table.columns.iter().enumerate() {
            let class = if column.numeric { " class=\"num\"" } else { "" };
            let style =
                colours.get(&(r, c)).map(|colour| format!(" style=\"background:{colour}\"")).unwrap_or_default();
            let _ = write!(html, "<td{class}{style}>{}</td>", escape(&table.display_cell(r, c)));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody>\n</table>\n");
    html
}

/// Background colours for the numeric cells of heat-map columns, keyed by (row,
/// column). Each column is scaled over its rows (or each group of rows), worst red
/// to best green; a group with fewer than two distinct values is left uncoloured.
fn heat_colours(table: &Table) -> HashMap<(usize, usize), String> {
    if table.heat_by_row {
        return row_heat_colours(table);
    }
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    for r in 0..table.rows.len() {
        let key = table.heat_group.map(|g| table.display_cell(r, g)).unwrap_or_default();
        groups.entry(key).or_default().push(r);
    }
    let mut colours = HashMap::new();
    for (c, column) in table.columns.iter().enumerate() {
        if column.heat == Heat::Off {
            continue;
        }
        for rows in groups.values() {
            let values: Vec<(usize, f64)> = rows
                .iter()
                .filter_map(|r| Some((*r, table.rows[*r][c].as_number()?)))
                .filter(|(_, v)| v.is_finite())
                .collect();
            for (r, colour) in scale(&values, |_| column.heat) {
                colours.insert((r, c), colour);
            }
        }
    }
    colours
}

/// Heat colours comparing the heat-map cells within each row (see
/// [`Table::heat_by_row`]); each cell's direction comes from its column.
fn row_heat_colours(table: &Table) -> HashMap<(usize, usize), String> {
    let mut colours = HashMap::new();
    for (r, row) in table.rows.iter().enumerate() {
        let values: Vec<(usize, f64)> = table
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.heat != Heat::Off)
            .filter_map(|(c, _)| Some((c, row[c].as_number()?)))
            .filter(|(_, v)| v.is_finite())
            .collect();
        for (c, colour) in scale(&values, |c| table.columns[c].heat) {
            colours.insert((r, c), colour);
        }
    }
    colours
}

/// Red-to-green colours for `(key, value)` pairs scaled between their extremes
/// (logarithmically when all are positive); none when fewer than two distinct values.
fn scale(values: &[(usize, f64)], heat: impl Fn(usize) -> Heat) -> Vec<(usize, String)> {
    let log = values.iter().all(|(_, v)| *v > 0.0);
    let scaled = |v: f64| if log { v.ln() } else { v };
    let lo = values.iter().map(|(_, v)| scaled(*v)).fold(f64::INFINITY, f64::min);
    let hi = values.iter().map(|(_, v)| scaled(*v)).fold(f64::NEG_INFINITY, f64::max);
    if values.len() < 2 || hi <= lo {
        return Vec::new();
    }
    values
        .iter()
        .map(|&(key, v)| {
            let mut t = (scaled(v) - lo) / (hi - lo);
            if heat(key) == Heat::LowerIsBetter {
                t = 1.0 - t;
            }
            (key, format!("hsl({:.0},70%,82%)", t * 120.0))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Cell, Column, ScatterChart};

    fn table() -> Table {
        let mut table = Table::new(
            "Codecs & <friends>",
            vec![
                Column::text("column"),
                Column::text("spec"),
                Column::number("ratio", 2).higher_is_better(),
                Column::number("ms", 0).lower_is_better(),
            ],
        );
        for (col, spec, ratio, ms) in [
            ("time", "zstd:1", 3.0, 10.0),
            ("time", "pco:8", 4.0, 20.0),
            ("price", "zstd:1", 12.0, 5.0),
            ("price", "pco:8", 30.0, 5.0),
        ] {
            table.push_row(vec![col.into(), spec.into(), ratio.into(), ms.into()]);
        }
        table
    }

    #[test]
    fn page_is_self_contained_with_table_and_svg() {
        let mut report = Report::new("Codec bench");
        report.push_note("rows: 1000");
        let t = table();
        let chart = ScatterChart::from_table("ratio vs ms", &t, "ms", "ratio", "spec").unwrap();
        report.push_table(t);
        report.push_chart(chart);
        let html = report.to_html();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<h2>Codecs &amp; &lt;friends&gt;</h2>"));
        assert!(html.contains("<table>") && html.contains("<th>ratio</th>"));
        assert!(html.contains("<td class=\"num\""));
        assert!(html.contains(">30.00</td>"));
        assert!(html.contains("<svg") && html.contains("</svg>"));
        assert!(html.contains("<p>rows: 1000</p>"));
        for external in ["<script", "<link", "src=", "@import", "url("] {
            assert!(!html.contains(external), "external asset via {external}");
        }
    }

    #[test]
    fn heat_runs_from_red_worst_to_green_best() {
        let mut t = table();
        t.heat_group = None;
        let colours = heat_colours(&t);
        assert_eq!(colours[&(3, 2)], "hsl(120,70%,82%)", "best ratio");
        assert_eq!(colours[&(0, 2)], "hsl(0,70%,82%)", "worst ratio");
        assert_eq!(colours[&(1, 3)], "hsl(0,70%,82%)", "slowest is worst");
        assert!(!colours.contains_key(&(0, 1)), "text is not coloured");
    }

    #[test]
    fn heat_groups_compare_like_with_like() {
        let t = table().with_heat_groups("column").unwrap();
        let colours = heat_colours(&t);
        assert_eq!(colours[&(1, 2)], "hsl(120,70%,82%)", "best within time");
        assert_eq!(colours[&(2, 2)], "hsl(0,70%,82%)", "worst within price");
        // Equal values within a group say nothing: no colour.
        assert!(!colours.contains_key(&(2, 3)) && !colours.contains_key(&(3, 3)));
    }

    #[test]
    fn rows_can_be_coloured_across_their_cells() {
        let mut t = Table::new(
            "m",
            vec![
                Column::text("column"),
                Column::number("gzip", 1).lower_is_better(),
                Column::number("zstd", 1).lower_is_better(),
            ],
        )
        .with_heat_by_row();
        t.push_row(vec!["Time".into(), 40.0.into(), 30.0.into()]);
        t.push_row(vec!["Sym".into(), 0.1.into(), 0.1.into()]);
        let colours = heat_colours(&t);
        assert_eq!(colours[&(0, 2)], "hsl(120,70%,82%)", "zstd is best for Time");
        assert_eq!(colours[&(0, 1)], "hsl(0,70%,82%)");
        assert!(!colours.contains_key(&(1, 1)), "a tie says nothing");
    }

    #[test]
    fn empty_and_text_cells_in_number_columns_are_skipped() {
        let mut t = Table::new("t", vec![Column::number("x", 1).higher_is_better()]);
        t.push_row(vec![Cell::Empty]);
        t.push_row(vec![1.0.into()]);
        t.push_row(vec![2.0.into()]);
        let colours = heat_colours(&t);
        assert_eq!(colours.len(), 2);
    }
}
