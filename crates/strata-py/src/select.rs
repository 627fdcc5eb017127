//! The SQL of `Database.table`: a read of one table without writing SQL, with
//! identifiers quoted so any table or column name is taken as a name.

use strata_store::Date;

/// Which date partitions a read keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Dates {
    /// These dates.
    List(Vec<Date>),
    /// From the first to the second, both included.
    Range(Date, Date),
}

/// `name` as a SQL identifier: in double quotes, inner quotes doubled.
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A date as a SQL literal that compares with the `date` column.
fn date_literal(date: Date) -> String {
    let (y, m, d) = date.ymd();
    format!("DATE '{y:04}-{m:02}-{d:02}'")
}

/// `SELECT <columns> FROM <table> WHERE <dates> AND (<filter>)`: all columns when
/// `columns` is `None`; `filter` is SQL text the caller wrote.
pub(crate) fn table_query(
    table: &str,
    dates: Option<&Dates>,
    columns: Option<&[String]>,
    filter: Option<&str>,
) -> String {
    let projection = match columns {
        Some(columns) => columns.iter().map(|c| quote_identifier(c)).collect::<Vec<_>>().join(", "),
        None => "*".to_string(),
    };
    let mut conditions = Vec::new();
    match dates {
        Some(Dates::List(list)) if list.is_empty() => conditions.push("FALSE".to_string()),
        Some(Dates::List(list)) => {
            let literals: Vec<String> = list.iter().map(|d| date_literal(*d)).collect();
            conditions.push(format!("\"date\" IN ({})", literals.join(", ")));
        }
        Some(Dates::Range(first, last)) => {
            conditions.push(format!("\"date\" BETWEEN {} AND {}", date_literal(*first), date_literal(*last)))
        }
        None => {}
    }
    if let Some(filter) = filter {
        conditions.push(format!("({filter})"));
    }
    let mut sql = format!("SELECT {projection} FROM {}", quote_identifier(table));
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    sql
}
