//! The self-contained HTML page: inline CSS and SVG, no scripts.
//!
//! Layout: the title and the introductory notes and warnings, a contents list,
//! how to read the colours, then the tables and charts in the report's order,
//! and last, folded, the full-results tables ([`Table::appendix`]). Any other
//! table longer than [`FOLD_ROWS`] is folded where it stands.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

use super::heat::{self, NOISE, Shade};
use super::{Caveat, Heat, Report, ScatterChart, Section, Table, csv};

/// Tables with more rows than this are shown folded (`<details>`), so that a
/// long flat table does not push everything after it off the first screens. A
/// benchmark's headline table (the I/O bench's 54 tests) stays open; hundreds of
/// rows (a query per spec) fold.
pub const FOLD_ROWS: usize = 100;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:110em}\
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}\
table{border-collapse:collapse;font-size:.9em}\
th,td{border:1px solid #ccc;padding:.25em .6em}\
th{background:#f0f0f0;position:sticky;top:0}\
td.flag{background:repeating-linear-gradient(45deg,#fff,#fff 4px,#f4f4f4 4px,#f4f4f4 8px);color:#777}\
td.flag::after{content:\" \\26A0\";color:#b36b00}\
.scroll{overflow-x:auto}details .scroll{max-height:80vh;overflow:auto}\
details{margin:.5em 0}summary{cursor:pointer;color:#345}\
.chart{display:block;margin:1em 0;max-width:100%;height:auto}\
p.warning{background:#fff4d6;border-left:4px solid #e0a000;padding:.4em .8em}\
nav.contents{background:#f7f7f7;padding:.5em 1.5em;display:inline-block}\
nav.contents ol{columns:2;column-gap:3em;margin:.3em 0}\
p.legend{color:#555;font-size:.85em;max-width:60em}";

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

/// A table or chart of the page, with its anchor.
enum Part<'a> {
    Table(&'a Table, String),
    Chart(&'a ScatterChart, String),
}

impl Part<'_> {
    fn title(&self) -> &str {
        match self {
            Part::Table(t, _) => &t.title,
            Part::Chart(c, _) => &c.title,
        }
    }

    fn anchor(&self) -> &str {
        match self {
            Part::Table(_, a) | Part::Chart(_, a) => a,
        }
    }
}

/// Unique anchors from titles: the title's slug, with `-2`, `-3`... on repeats.
#[derive(Default)]
struct Anchors(HashMap<String, usize>);

impl Anchors {
    fn next(&mut self, title: &str) -> String {
        let base = format!("s-{}", csv::slug(title));
        let seen = self.0.entry(base.clone()).or_default();
        *seen += 1;
        if *seen == 1 { base } else { format!("{base}-{seen}") }
    }
}

/// The whole report as one HTML document.
pub(super) fn page(report: &Report) -> String {
    let title = escape(&report.title);
    let mut anchors = Anchors::default();
    let mut parts = Vec::new();
    for section in &report.sections {
        match section {
            Section::Table(t) => parts.push(Part::Table(t, anchors.next(&t.title))),
            Section::Chart(c) => parts.push(Part::Chart(c, anchors.next(&c.title))),
            Section::Note(_) | Section::Warning(_) => {}
        }
    }
    let appendix_anchor = anchors.next("full results");
    // Page-wide CSS: one rule per heat-map shade used, one per table's numeric columns.
    let shades: Vec<HashMap<(usize, usize), Shade>> = report.tables().map(heat::shades).collect();
    let used: BTreeSet<Shade> = shades.iter().flat_map(|s| s.values().copied()).collect();
    let mut css: String = used.iter().map(|s| format!("td.{}{{background:{}}}", s.class(), s.css())).collect();
    for part in &parts {
        if let Part::Table(table, anchor) = part {
            css.push_str(&numeric_css(table, anchor));
        }
    }
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>{STYLE}{css}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
    );
    // The introduction: notes and warnings before the first table or chart.
    let intro = report.sections.iter().take_while(|s| matches!(s, Section::Note(_) | Section::Warning(_))).count();
    for section in &report.sections[..intro] {
        html.push_str(&text_html(section));
    }
    html.push_str(&contents(&parts, &appendix_anchor));
    html.push_str(&legend(report));
    // The body: sections in order (appendix tables held back), then the appendix.
    let mut tables = report.tables().zip(&shades);
    let mut parts_iter = parts.iter();
    let mut appendix = Vec::new();
    for section in &report.sections[intro..] {
        match section {
            Section::Note(_) | Section::Warning(_) => html.push_str(&text_html(section)),
            Section::Table(_) | Section::Chart(_) => {
                let part = parts_iter.next().expect("one part per table or chart");
                match part {
                    Part::Table(table, anchor) => {
                        let (_, table_shades) = tables.next().expect("one shade map per table");
                        if table.appendix {
                            appendix.push((*table, anchor, table_shades));
                        } else {
                            html.push_str(&table_html(table, anchor, table_shades));
                        }
                    }
                    Part::Chart(chart, anchor) => {
                        let _ = writeln!(
                            html,
                            "<section id=\"{anchor}\">\n<h2>{}</h2>\n{}\n</section>",
                            escape(&chart.title),
                            chart.to_svg()
                        );
                    }
                }
            }
        }
    }
    if !appendix.is_empty() {
        let _ = writeln!(
            html,
            "<h2 id=\"{appendix_anchor}\">Full results</h2>\n<p class=\"legend\">Every measurement, one row each \
             (also in the CSV files beside this page).</p>"
        );
        for (table, anchor, table_shades) in appendix {
            html.push_str(&table_html(table, anchor, table_shades));
        }
    }
    html.push_str("</body>\n</html>\n");
    html
}

fn text_html(section: &Section) -> String {
    match section {
        Section::Note(text) => format!("<p>{}</p>\n", escape(text)),
        Section::Warning(text) => format!("<p class=\"warning\">\u{26a0} {}</p>\n", escape(text)),
        Section::Table(_) | Section::Chart(_) => String::new(),
    }
}

/// The contents list: every table and chart in page order, the appendix's
/// tables under "Full results". Empty for a page of fewer than two parts.
fn contents(parts: &[Part], appendix_anchor: &str) -> String {
    if parts.len() < 2 {
        return String::new();
    }
    let item = |p: &Part| format!("<li><a href=\"#{}\">{}</a></li>", p.anchor(), escape(p.title()));
    let is_appendix = |p: &Part| matches!(p, Part::Table(t, _) if t.appendix);
    let mut html = String::from("<nav class=\"contents\"><strong>Contents</strong>\n<ol>\n");
    for part in parts.iter().filter(|p| !is_appendix(p)) {
        html.push_str(&item(part));
        html.push('\n');
    }
    let appendix: Vec<String> = parts.iter().filter(|p| is_appendix(p)).map(item).collect();
    if !appendix.is_empty() {
        let _ =
            writeln!(html, "<li><a href=\"#{appendix_anchor}\">Full results</a><ul>{}</ul></li>", appendix.concat());
    }
    html.push_str("</ol>\n</nav>\n");
    html
}

/// How to read the colours and marks, when the page has any.
fn legend(report: &Report) -> String {
    let coloured = report.tables().any(|t| t.columns.iter().any(|c| c.heat != Heat::Off));
    let flagged = report.tables().any(|t| !t.flags.is_empty());
    let mut text = String::new();
    if coloured {
        let _ = write!(
            text,
            "Colours: within a table, each coloured column is one scale over all its rows (a table of one \
             metric, one scale over all its cells); green is the best value, red the worst, logarithmic \
             when all values are positive. The paler the colours, the closer best and worst are (full \
             colour from a factor of two); values all within {:.0}% of each other are noise and not \
             coloured. ",
            NOISE * 100.0
        );
    }
    if flagged {
        text.push_str(
            "Hatched cells marked \u{26a0} are not to be trusted (the warning above their table says why) \
             and are left out of the colour scales.",
        );
    }
    if text.is_empty() { text } else { format!("<p class=\"legend\">{}</p>\n", text.trim_end()) }
}

fn table_html(table: &Table, anchor: &str, shades: &HashMap<(usize, usize), Shade>) -> String {
    let mut html = format!("<section id=\"{anchor}\">\n<h2>{}</h2>\n", escape(&table.title));
    for warning in &table.warnings {
        let _ = writeln!(html, "<p class=\"warning\">\u{26a0} {}</p>", escape(warning));
    }
    for (summary, count) in table.flag_summaries() {
        let plural = if count == 1 { "" } else { "s" };
        let _ = writeln!(html, "<p class=\"warning\">\u{26a0} {count} cell{plural} marked: {}.</p>", escape(&summary));
    }
    let fold = table.appendix || table.rows.len() > FOLD_ROWS;
    if fold {
        let _ = writeln!(html, "<details><summary>{} rows: show the table</summary>", table.rows.len());
    }
    html.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for column in &table.columns {
        let _ = write!(html, "<th>{}</th>", escape(&column.name));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for r in 0..table.rows.len() {
        html.push_str("<tr>");
        for c in 0..table.columns.len() {
            let mut classes: Vec<String> = Vec::new();
            if let Some(shade) = shades.get(&(r, c)) {
                classes.push(shade.class());
            }
            let flag = table.flags.get(&(r, c));
            if flag.is_some() {
                classes.push("flag".into());
            }
            let class = if classes.is_empty() { String::new() } else { format!(" class=\"{}\"", classes.join(" ")) };
            // A tooltip only where the cell has its own numbers to tell; the
            // warning above the table says the rest once.
            let title = match flag {
                Some(caveat @ Caveat::BelowTimerResolution { .. }) => {
                    format!(" title=\"{}\"", escape(&caveat.to_string()))
                }
                _ => String::new(),
            };
            let _ = write!(html, "<td{class}{title}>{}</td>", escape(&table.display_cell(r, c)));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody>\n</table></div>\n");
    if fold {
        html.push_str("</details>\n");
    }
    html.push_str("</section>\n");
    html
}

/// The CSS right-aligning the numeric columns of the table in section `anchor`:
/// one rule per table, a range selector per run of numeric columns, instead of a
/// class on every cell (a page's long tables hold tens of thousands of cells).
fn numeric_css(table: &Table, anchor: &str) -> String {
    let mut selectors = Vec::new();
    let mut c = 0;
    while c < table.columns.len() {
        if !table.columns[c].numeric {
            c += 1;
            continue;
        }
        let start = c;
        while c < table.columns.len() && table.columns[c].numeric {
            c += 1;
        }
        // nth-child counts from 1.
        selectors.push(format!("#{anchor} td:nth-child(n+{}):nth-child(-n+{c})", start + 1));
    }
    if selectors.is_empty() {
        return String::new();
    }
    format!("{}{{text-align:right;font-variant-numeric:tabular-nums}}", selectors.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::codecs_by_column;
    use crate::report::{Column, ScatterChart};

    fn table() -> Table {
        codecs_by_column("Codecs & <friends>")
    }

    fn long_table(rows: usize) -> Table {
        let mut t = Table::new("all results", vec![Column::text("spec"), Column::number("ms", 1)]);
        for i in 0..rows {
            t.push_row(vec![format!("spec{i}").into(), (i as f64).into()]);
        }
        t
    }

    /// A report shaped like bench zip's: notes, the long results first, then a heat
    /// map and a chart.
    fn zip_like() -> Report {
        let mut report = Report::new("Codec bench");
        report.push_note("rows: 1000");
        report.push_warning("trade has 500 rows");
        report.push_table(long_table(FOLD_ROWS + 1).in_appendix());
        let t = table();
        let chart = ScatterChart::from_table("ratio vs ms", &t, "ms", "ratio", "spec").unwrap();
        report.push_table(t);
        report.push_chart(chart);
        report
    }

    #[test]
    fn page_is_self_contained_with_table_and_svg() {
        let html = zip_like().to_html();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains(">Codecs &amp; &lt;friends&gt;</h2>"));
        assert!(html.contains("<table>") && html.contains("<th>ratio</th>"));
        assert!(html.contains("#s-codecs-friends td:nth-child(n+3):nth-child(-n+4){text-align:right"));
        assert!(html.contains(">30.00</td>"));
        assert!(html.contains("<svg") && html.contains("</svg>"));
        assert!(html.contains("<p>rows: 1000</p>"));
        assert!(html.contains("<p class=\"warning\">\u{26a0} trade has 500 rows</p>"));
        for external in ["<script", "<link", "src=", "@import", "url("] {
            assert!(!html.contains(external), "external asset via {external}");
        }
    }

    #[test]
    fn contents_link_every_section_in_page_order() {
        let html = zip_like().to_html();
        let nav = &html[html.find("<nav").unwrap()..html.find("</nav>").unwrap()];
        let links: Vec<&str> = nav.split("href=\"#").skip(1).map(|rest| &rest[..rest.find('"').unwrap()]).collect();
        assert_eq!(links, ["s-codecs-friends", "s-ratio-vs-ms", "s-full-results", "s-all-results"]);
        for anchor in links {
            assert_eq!(html.matches(&format!("id=\"{anchor}\"")).count(), 1, "one target for {anchor}");
        }
        assert!(html.find("<nav").unwrap() < html.find("<table>").unwrap(), "contents before any table");
    }

    #[test]
    fn heat_maps_and_charts_come_before_the_folded_full_results() {
        let html = zip_like().to_html();
        let heat_map = html.find("id=\"s-codecs-friends\"").unwrap();
        let chart = html.find("<svg").unwrap();
        let full = html.find("id=\"s-all-results\"").unwrap();
        assert!(heat_map < full && chart < full, "the flat table pushed first in the report is shown last");
        let details = html.find("<details>").unwrap();
        assert!(details > full && html[details..].contains("spec30</td>"), "the long table is folded");
        assert!(html[details..].contains(&format!("<summary>{} rows", FOLD_ROWS + 1)));
    }

    #[test]
    fn only_long_tables_fold() {
        let mut report = Report::new("r");
        report.push_table(long_table(FOLD_ROWS));
        report.push_table(long_table(FOLD_ROWS + 1));
        let html = report.to_html();
        assert_eq!(html.matches("<details>").count(), 1);
        assert!(html.find("<details>").unwrap() > html.find("id=\"s-all-results-2\"").unwrap());
    }

    #[test]
    fn repeated_titles_get_distinct_anchors() {
        let mut anchors = Anchors::default();
        assert_eq!(anchors.next("quote: size"), "s-quote-size");
        assert_eq!(anchors.next("quote: size"), "s-quote-size-2");
        assert_eq!(anchors.next("Quote size!"), "s-quote-size-3");
    }

    #[test]
    fn shades_become_classes_with_one_rule_each() {
        let html = zip_like().to_html();
        assert!(html.contains("td.h12s4{background:hsl(120,75%,82%)}"));
        assert_eq!(html.matches("td.h12s4{").count(), 1);
        assert!(html.contains("<td class=\"h12s4\">30.00</td>"));
        assert!(html.contains("Colours: within a table"));
    }

    #[test]
    fn flagged_cells_are_marked_explained_and_uncoloured() {
        let mut t = table();
        t.flag(3, 3, Caveat::BelowTimerResolution { seconds: 2e-8, resolution: 4e-8 });
        t.flag(2, 3, Caveat::BelowTimerResolution { seconds: 1e-8, resolution: 4e-8 });
        t.flag(0, 2, Caveat::SmallData("time has 10 rows".into()));
        t.warn("whole table: tiny");
        let mut report = Report::new("r");
        report.push_table(t);
        let html = report.to_html();
        assert!(
            html.contains(
                "<td class=\"flag\" title=\"timed at 20 ns, below the timer&#39;s resolution of 40 ns\">5</td>"
            )
        );
        assert!(
            html.contains(
                "\u{26a0} 2 cells marked: a timing behind each is below the timer&#39;s resolution (40 ns), so"
            )
        );
        assert!(html.contains("\u{26a0} 1 cell marked: time has 10 rows.</p>"));
        assert!(html.contains("<p class=\"warning\">\u{26a0} whole table: tiny</p>"));
        assert!(html.contains("Hatched cells marked"));
    }

    #[test]
    fn pages_without_colour_or_flags_have_no_legend() {
        let mut report = Report::new("r");
        report.push_table(long_table(3));
        assert!(!report.to_html().contains("class=\"legend\""));
    }
}
