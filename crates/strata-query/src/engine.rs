//! The query engine: a DataFusion session with Strata's tables, functions, ASOF
//! and WINDOW JOIN and limits, and a blocking entry point for callers without a runtime.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use datafusion::catalog::MemorySchemaProvider;
use datafusion::common::TableReference;
use datafusion::dataframe::DataFrame;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::{LogicalPlan, ScalarUDF};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement as DfStatement};
use datafusion::sql::sqlparser::ast::{Query, Statement as SqlStatement};
use datafusion::sql::sqlparser::dialect::{Dialect, dialect_from_str};
use strata_store::Database;

use crate::answer::collect_within_limit;
use crate::cancel::{Cancel, bounded};
use crate::count_rows::CountRows;
use crate::dialect::{columns, depth, hidden, names, null_treatment, pivot, pivot_statement, rename};
use crate::dictionary_groups::DictionaryGroups;
use crate::dictionary_literals::DictionaryLiterals;
use crate::error::{QueryError, Result};
use crate::join::StrataQueryPlanner;
use crate::join::asof::plan::AsofRule;
use crate::join::condition::JoinMarker;
use crate::join::sql::{ASOF_MARKER, WINDOW_MARKER, blank_time_joins, mark_time_joins};
use crate::join::window::plan::WindowRule;
use crate::memory::MemoryTable;
use crate::rolling::RollingWindows;
use crate::run_aggregate::RunAggregates;
use crate::stack::{WORKER_STACK, on_query_stack};
use crate::table::{ReadInOrder, ScanCounters, ScanStats, StrataTable};
use crate::whole_partition_windows::WholePartitionWindows;
use crate::window_top_k::WindowTopK;

/// How an engine runs queries.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Bytes that sorts, aggregations, joins and the answer being gathered may
    /// hold at once; a query that needs more fails with a "resources exhausted"
    /// error, or an answer too large, instead of taking the machine (nothing
    /// spills to disk).
    /// `None`: no limit.
    pub memory_limit: Option<usize>,
    /// Partitions run in parallel (default: the number of cores).
    pub threads: usize,
    /// Rows per batch read from a table.
    pub batch_rows: usize,
    /// Whether statements other than queries run: DDL (`CREATE [EXTERNAL] TABLE`,
    /// `CREATE VIEW`, `DROP`), DML (`INSERT`, `COPY ... TO`) and `SET`. Off by
    /// default: those read and write the process's files (`CREATE EXTERNAL TABLE ...
    /// LOCATION '/etc/passwd'`, `COPY ... TO '/tmp/x'`) and change the tables every
    /// other user of the engine sees, so an engine that answers network clients
    /// must refuse them. With it off only SELECT, WITH, EXPLAIN, SHOW, DESCRIBE and
    /// VALUES run.
    pub allow_write: bool,
    /// How long one statement may run before it is stopped with
    /// [`QueryError::TimedOut`]; `None`: no limit (the default in process; the
    /// servers set one).
    pub query_timeout: Option<std::time::Duration>,
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        EngineOptions {
            memory_limit: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            batch_rows: 65_536,
            allow_write: false,
            query_timeout: None,
        }
    }
}

/// The most columns a PIVOT over the values it finds may make (DuckDB's default
/// `pivot_limit`): past it, a pivot on a column such as a trade id is a mistake.
const MAX_PIVOT_VALUES: usize = 100_000;

/// The most queries with `COLUMNS(...)`, and the most stars to write out (`*
/// RENAME`, a star over a view of hidden columns), one statement may have.
const MAX_WRITTEN_OUT: usize = 1_000;

/// A rewrite's error as "SQL error: <what>".
fn sql_error(e: String) -> QueryError {
    QueryError::Invalid(format!("SQL error: {e}"))
}

/// A parser error as "SQL error: <what and where>".
fn parse_error(e: datafusion::error::DataFusionError) -> QueryError {
    use datafusion::sql::sqlparser::parser::ParserError;
    match e {
        datafusion::error::DataFusionError::SQL(inner, _) => match *inner {
            ParserError::ParserError(m) | ParserError::TokenizerError(m) => {
                QueryError::Invalid(format!("SQL error: {m}"))
            }
            other => QueryError::Invalid(format!("SQL error: {other}")),
        },
        other => other.into(),
    }
}

/// Refuses a plan that is not a query: DDL, DML (`COPY` included) or a statement
/// such as `SET`, anywhere in it (under `EXPLAIN` too), with what was refused and why.
fn refuse_writes(plan: &LogicalPlan) -> Result<()> {
    let read_only = SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false);
    read_only.verify_plan(plan).map_err(|e| {
        let what = e.strip_backtrace();
        let what = what.strip_prefix("Error during planning: ").unwrap_or(&what);
        QueryError::Refused(format!(
            "{what}: this engine is read-only; it runs queries only (SELECT, WITH, EXPLAIN, SHOW, DESCRIBE, \
             VALUES), because DDL, DML, COPY and SET could read or write the machine's files or change the \
             tables other clients see"
        ))
    })
}

/// Runs the work of statement `query`, turning a panic inside it into
/// [`QueryError::Panicked`]: one raised while polling here, one DataFusion resumes
/// here from a task it spawned, or a task's panic it reports as a join error. The
/// panic hook has already run (its message goes to standard error); callers get an
/// error naming the query and keep a working engine.
async fn guarded<T>(query: &str, work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    use futures::FutureExt;
    let panicked = |message: String| QueryError::Panicked { query: query.to_string(), message };
    match std::panic::AssertUnwindSafe(work).catch_unwind().await {
        Ok(Err(QueryError::DataFusion(e))) => match e.find_root() {
            datafusion::error::DataFusionError::ExecutionJoin(join) if join.is_panic() => {
                Err(panicked(join.to_string()))
            }
            _ => Err(QueryError::DataFusion(e)),
        },
        Ok(result) => result,
        Err(payload) => Err(panicked(
            payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string()),
        )),
    }
}

/// SQL over a Strata database and in-memory tables.
///
/// Identifiers are case-sensitive and not folded to lower case, as in q: columns
/// such as `Bid_Price` are written as they are stored, without quotes.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use strata_store::{Column, ColumnType, Database, Table, TableLocation, TableWrite};
/// let dir = tempfile::tempdir()?;
/// let db = Database::open(dir.path())?;
/// let trades = Table::new(vec![
///     ("Symbol".into(), Column::from_symbols(["A", "B", "A"])),
///     ("Price".into(), Column::from_values(ColumnType::Float, vec![1.0, 2.0, 3.0])?),
/// ])?;
/// db.write_table(&TableLocation::Partition("2024.01.02".parse()?, "trade".into()), &trades, &TableWrite::default())?;
/// let engine = strata_query::Engine::open(dir.path())?;
/// let batches = engine.sql("SELECT Symbol, sum(Price) AS p FROM trade WHERE date = '2024-01-02' GROUP BY Symbol ORDER BY Symbol")?;
/// assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
/// # Ok(()) }
/// ```
pub struct Engine {
    ctx: SessionContext,
    runtime: tokio::runtime::Runtime,
    db: Option<Database>,
    counters: Arc<ScanCounters>,
    allow_write: bool,
    memory_limit: Option<usize>,
    query_timeout: Option<std::time::Duration>,
    /// Each stored table with a view of hidden columns (see [`hidden`]): the hidden
    /// columns the view adds.
    hidden_columns: std::sync::RwLock<HashMap<String, Vec<String>>>,
}

/// DataFusion's physical optimizer rules with Strata's window operators where its
/// own `WindowTopN` stood: [`WindowTopK`] (the first rows of each group) and then
/// [`RollingWindows`] (windows over the stored order), both before the rules that
/// add the sorts and repartitions a window needs, so those serve the new operators;
/// and [`ReadInOrder`] (a sorted table read in order rather than its partitions
/// merged), [`CountRows`] and [`RunAggregates`] (hash aggregates on one integer
/// key looking up each run of equal keys once) last before the final
/// check, once every merge is in place and DataFusion's rules have seen its
/// aggregates.
fn physical_rules() -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    let mut rules: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> = Vec::new();
    for rule in PhysicalOptimizer::new().rules {
        match rule.name() {
            crate::window_top_k::DATAFUSION_RULE => {
                rules.push(Arc::new(WindowTopK));
                rules.push(Arc::new(RollingWindows));
            }
            FINAL_CHECK => {
                rules.push(Arc::new(ReadInOrder));
                rules.push(Arc::new(CountRows));
                rules.push(Arc::new(RunAggregates));
                rules.push(rule);
            }
            _ => rules.push(rule),
        }
    }
    rules
}

/// DataFusion's last physical rule, which checks the plan's requirements.
const FINAL_CHECK: &str = "SanityCheckPlan";

/// Bytes of a partition's rows up to which a sort concatenates them and sorts
/// once (see [`Engine::new`]).
const SORT_IN_PLACE_BYTES: usize = 8 << 20;

impl Engine {
    /// An engine with no database: register in-memory tables to query.
    pub fn new(options: &EngineOptions) -> Result<Engine> {
        let mut config = SessionConfig::new()
            .with_target_partitions(options.threads.max(1))
            .with_batch_size(options.batch_rows.max(1))
            .with_information_schema(true);
        config.options_mut().sql_parser.enable_ident_normalization = false;
        // A subquery's ORDER BY orders what a plain projection over it returns, as in
        // DuckDB (`SELECT * RENAME (...) FROM (... ORDER BY ...)`); DataFusion would
        // drop it unless a LIMIT follows.
        config.options_mut().sql_parser.enable_subquery_sort_elimination = false;
        // Tables are stored sorted (by symbol, then time, as kdb+ keeps them): a
        // window or join over that order merges the scan's sorted partitions
        // instead of sorting every row again.
        config.options_mut().optimizer.prefer_existing_sort = true;
        // The first rows of every group from a heap per group, not a sort of all rows
        // (see `window_top_k` and `physical_rules`).
        config.options_mut().optimizer.enable_window_topn = true;
        // A sort of up to 8 MiB a partition concatenates its batches and sorts
        // them once, rather than sorting each batch and merging them (DataFusion's
        // default stops at 1 MiB): a day's 241k trades in time order, about
        // 3 MiB a partition, went from 22.4 to 17.3 ms.
        config.options_mut().execution.sort_in_place_threshold_bytes = SORT_IN_PLACE_BYTES;
        let mut runtime_env = RuntimeEnvBuilder::new();
        if let Some(limit) = options.memory_limit {
            // A limit is a limit: no spilling to temporary files past it.
            let no_spill = DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled);
            runtime_env = runtime_env.with_memory_limit(limit, 1.0).with_disk_manager_builder(no_spill);
        }
        let state = crate::dialect::install(SessionStateBuilder::new())
            .with_config(config)
            .with_runtime_env(runtime_env.build_arc()?)
            .with_default_features()
            .with_query_planner(Arc::new(StrataQueryPlanner))
            .with_physical_optimizer_rules(physical_rules())
            .build();
        let ctx = SessionContext::new_with_state(state);
        if let Some(catalog) = ctx.catalog("datafusion") {
            catalog.register_schema(hidden::HIDDEN_SCHEMA, Arc::new(MemorySchemaProvider::new()))?;
        }
        ctx.add_analyzer_rule(Arc::new(DictionaryLiterals));
        ctx.add_analyzer_rule(Arc::new(AsofRule));
        // Before DictionaryGroups, so the aggregates it writes group symbols by code.
        ctx.add_optimizer_rule(Arc::new(WholePartitionWindows));
        ctx.add_optimizer_rule(Arc::new(DictionaryGroups));
        ctx.add_analyzer_rule(Arc::new(WindowRule));
        for marker in [ASOF_MARKER, WINDOW_MARKER] {
            ctx.register_udf(ScalarUDF::new_from_impl(JoinMarker::new(marker)));
        }
        crate::functions::register(&ctx)?;
        if let Some(limit) = options.memory_limit {
            crate::functions::bound_outputs(&ctx, limit)?;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.threads.max(1))
            .thread_name("strata-query")
            .thread_stack_size(WORKER_STACK)
            .enable_time()
            .build()
            .map_err(|e| QueryError::Invalid(format!("cannot start the query runtime: {e}")))?;
        Ok(Engine {
            ctx,
            runtime,
            db: None,
            counters: Arc::new(ScanCounters::default()),
            allow_write: options.allow_write,
            memory_limit: options.memory_limit,
            query_timeout: options.query_timeout,
            hidden_columns: Default::default(),
        })
    }

    /// An engine over the database at `root` with default options: every table,
    /// splayed or partitioned, registered under its name.
    pub fn open(root: &Path) -> Result<Engine> {
        Engine::open_with(root, &EngineOptions::default())
    }

    /// [`Engine::open`] with options.
    pub fn open_with(root: &Path, options: &EngineOptions) -> Result<Engine> {
        let db = Database::open_existing(root)?;
        let mut engine = Engine::new(options)?;
        engine.db = Some(db);
        engine.reload()?;
        Ok(engine)
    }

    /// Re-reads the database: new partitions, new tables, a grown sym file (kdb+'s
    /// HDB reload). In-memory tables stay.
    pub fn reload(&self) -> Result<()> {
        let Some(db) = &self.db else { return Ok(()) };
        let symbols = db.symbols()?;
        // One listing of the partition roots; no partition is opened until a query
        // keeps it (see `StrataTable`).
        let listing = db.listing()?;
        for name in &listing.tables {
            let table = StrataTable::open(db, name, &listing.dates, &symbols, self.counters.clone())?;
            // A bare reference keeps the name's case (quoteNorm), as SQL is case-sensitive here.
            self.ctx.deregister_table(TableReference::bare(name.as_str()))?;
            let view = TableReference::partial(hidden::HIDDEN_SCHEMA, name.as_str());
            self.ctx.deregister_table(view.clone())?;
            let mut hidden_columns = self.hidden_columns.write().unwrap_or_else(|poisoned| poisoned.into_inner());
            hidden_columns.remove(name);
            if let Some(with_hidden) = table.with_hidden() {
                hidden_columns.insert(name.clone(), table.hidden_columns().into_iter().map(String::from).collect());
                self.ctx.register_table(view, Arc::new(with_hidden))?;
            }
            self.ctx.register_table(TableReference::bare(name.as_str()), Arc::new(table))?;
        }
        Ok(())
    }

    /// Makes `table` queryable as `name` (replacing any table of that name).
    pub fn register_memory_table(&self, name: &str, table: Arc<MemoryTable>) -> Result<()> {
        self.ctx.deregister_table(TableReference::bare(name))?;
        self.ctx.register_table(TableReference::bare(name), table)?;
        Ok(())
    }

    /// Makes table `name` unknown to SQL (nothing happens if there is none): an RDB's
    /// table that end of day has since written.
    pub fn deregister_table(&self, name: &str) -> Result<()> {
        self.ctx.deregister_table(TableReference::bare(name))?;
        Ok(())
    }

    /// Names of the tables SQL can see.
    pub fn table_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .ctx
            .catalog("datafusion")
            .and_then(|c| c.schema("public"))
            .map(|s| s.table_names())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// What scans of stored tables have read so far.
    pub fn scan_stats(&self) -> ScanStats {
        self.counters.snapshot()
    }

    /// The DataFusion session, for callers that need more than SQL text. What is run
    /// through it directly is not checked against [`EngineOptions::allow_write`]:
    /// never hand it text from a client.
    pub fn session(&self) -> &SessionContext {
        &self.ctx
    }

    /// Runs one SQL statement and returns its rows. Blocks; from async code use
    /// [`Engine::sql_async`].
    pub fn sql(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        on_query_stack(|| self.runtime.block_on(self.sql_async(sql)))
    }

    /// Runs one SQL statement. A panic inside the engine is
    /// [`QueryError::Panicked`], not a panic of the caller.
    /// Stopped with [`QueryError::TimedOut`] past [`EngineOptions::query_timeout`].
    pub async fn sql_async(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        let work = guarded(sql, async {
            let frame = self.dataframe(sql).await?;
            self.collect(frame).await
        });
        bounded(work, self.query_timeout, &Cancel::new()).await
    }

    /// Runs one SQL statement: its result's schema and its rows, from one plan (so
    /// an empty result still has its columns, and a statement is never planned
    /// twice: a second plan of a `DROP` that ran would report the table missing).
    /// A panic inside the engine is [`QueryError::Panicked`].
    pub fn sql_with_schema(&self, sql: &str) -> Result<(arrow_schema::SchemaRef, Vec<RecordBatch>)> {
        self.sql_with_schema_until(sql, &Cancel::new())
    }

    /// [`Engine::sql_with_schema`], stopped with [`QueryError::Cancelled`] when
    /// `cancel` fires (its client went away) and with [`QueryError::TimedOut`] past
    /// [`EngineOptions::query_timeout`]. Safe to call from several threads at once.
    pub fn sql_with_schema_until(
        &self,
        sql: &str,
        cancel: &Cancel,
    ) -> Result<(arrow_schema::SchemaRef, Vec<RecordBatch>)> {
        on_query_stack(|| {
            let work = guarded(sql, async {
                let frame = self.dataframe(sql).await?;
                let schema = Arc::new(frame.schema().as_arrow().clone());
                Ok((schema, self.collect(frame).await?))
            });
            self.runtime.block_on(bounded(work, self.query_timeout, cancel))
        })
    }

    /// The schema a statement's result has, without running it.
    pub fn schema_of(&self, sql: &str) -> Result<arrow_schema::SchemaRef> {
        on_query_stack(|| {
            self.runtime.block_on(guarded(sql, async {
                let frame = self.dataframe(sql).await?;
                Ok(std::sync::Arc::new(frame.schema().as_arrow().clone()))
            }))
        })
    }

    /// The physical plan of a statement, as `EXPLAIN` prints it.
    pub fn explain(&self, sql: &str) -> Result<String> {
        on_query_stack(|| {
            self.runtime.block_on(guarded(sql, async {
                let frame = self.dataframe(sql).await?;
                let plan = frame.create_physical_plan().await.map_err(QueryError::from)?;
                Ok(datafusion::physical_plan::displayable(plan.as_ref()).indent(true).to_string())
            }))
        })
    }

    /// The rows of `frame`, within the engine's memory limit (see [`crate::answer`]).
    async fn collect(&self, frame: DataFrame) -> Result<Vec<RecordBatch>> {
        collect_within_limit(frame, self.memory_limit).await.map_err(|e| self.explain_error(e))
    }

    /// Plans one SQL statement, ASOF and WINDOW JOIN included, as a DataFusion data frame.
    pub async fn dataframe(&self, sql: &str) -> Result<DataFrame> {
        let state = self.ctx.state();
        let dialect_name = state.config().options().sql_parser.dialect.to_string();
        let dialect = dialect_from_str(&dialect_name)
            .ok_or_else(|| QueryError::Invalid(format!("unknown SQL dialect {dialect_name}")))?;
        depth::check_operators(sql, dialect.as_ref()).map_err(QueryError::Invalid)?;
        let pivoted = pivot_statement::rewrite(sql, dialect.as_ref()).map_err(sql_error)?;
        let sql = pivoted.as_deref().unwrap_or(sql);
        let blanked = blank_time_joins(sql, dialect.as_ref()).map_err(sql_error)?;
        let mut statements = DFParser::parse_sql_with_dialect(&blanked.sql, dialect.as_ref()).map_err(parse_error)?;
        if statements.len() != 1 {
            return Err(QueryError::Invalid(format!("expected one SQL statement, found {}", statements.len())));
        }
        let mut statement = statements.pop_front().expect("one statement");
        // The query under `EXPLAIN [ANALYZE]` is written out as the query itself:
        // its time joins marked, its PIVOT and RENAME written out.
        let query = match &mut statement {
            DfStatement::Explain(explain) => explain.statement.as_mut(),
            other => other,
        };
        if let DfStatement::Statement(inner) = query {
            depth::balance_and_bound(inner).map_err(QueryError::Invalid)?;
            // Before any rewrite copies an expression: a modifier the parser gave to
            // the wrong call would be copied with it, or dropped.
            null_treatment::give_to_written_call(inner).map_err(sql_error)?;
            mark_time_joins(inner, &blanked.relations).map_err(sql_error)?;
            self.write_out_data_dependent(inner, dialect.as_ref()).await?;
            names::name_as_written(inner);
        }
        let plan = state.statement_to_plan(statement).await.map_err(|e| self.explain_error(e.into()))?;
        // Before `execute_logical_plan`, which runs DDL at once.
        if !self.allow_write {
            refuse_writes(&plan)?;
        }
        self.ctx.execute_logical_plan(plan).await.map_err(|e| self.explain_error(e.into()))
    }

    /// Writes out the SQL forms DataFusion parses but does not plan, whose meaning
    /// depends on the tables: `PIVOT` / `UNPIVOT` (their input's columns, the
    /// values found), then `* RENAME` (the star's columns).
    async fn write_out_data_dependent(&self, statement: &mut SqlStatement, dialect: &dyn Dialect) -> Result<()> {
        let hidden = self.point_at_hidden_views(statement);
        let needs = pivot::needs(statement).map_err(sql_error)?;
        let mut answers = Vec::with_capacity(needs.len());
        for need in needs {
            answers.push(self.answer(need).await?);
        }
        pivot::write_out(statement, answers, dialect).map_err(sql_error)?;
        // One query's COLUMNS(...), then one star, at a time, innermost first; each
        // one written out is gone, and a bound keeps a mistake here from looping.
        for written in 0.. {
            let Some(probe) = columns::probe(statement) else { break };
            if written == MAX_WRITTEN_OUT {
                return Err(QueryError::Invalid(format!("more than {MAX_WRITTEN_OUT} queries with COLUMNS(...)")));
            }
            let columns = self.columns_of(probe).await?;
            columns::expand(statement, &columns, &hidden).map_err(sql_error)?;
        }
        for written in 0.. {
            let Some(probe) = rename::probe(statement, &hidden) else { break };
            if written == MAX_WRITTEN_OUT {
                return Err(QueryError::Invalid(format!("more than {MAX_WRITTEN_OUT} stars to write out")));
            }
            let columns = self.columns_of(probe).await?;
            rename::expand(statement, &columns, &hidden).map_err(sql_error)?;
        }
        Ok(())
    }

    /// The columns `probe` answers with, each with its table: planned, not run.
    async fn columns_of(&self, probe: Query) -> Result<Vec<(Option<TableReference>, String)>> {
        let probe = DfStatement::Statement(Box::new(SqlStatement::Query(Box::new(probe))));
        let plan = self.ctx.state().statement_to_plan(probe).await.map_err(|e| self.explain_error(e.into()))?;
        Ok(plan.schema().iter().map(|(t, f)| (t.cloned(), f.name().clone())).collect())
    }

    /// Where `statement` names a hidden column (`i`, `rowid`), the tables it reads
    /// pointed at their views of hidden columns (see [`hidden`]); the aliases they
    /// are read by, with the hidden columns of each.
    fn point_at_hidden_views(&self, statement: &mut SqlStatement) -> rename::Hidden {
        if !hidden::names_hidden(statement) {
            return rename::Hidden::new();
        }
        let hidden_columns = self.hidden_columns.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        hidden::point_at_views(statement, |name| hidden_columns.get(name).cloned())
    }

    /// Answers what a PIVOT needs to know of the data: its input's columns (planned
    /// only) or the values it spreads (run, read-only as every query here).
    async fn answer(&self, need: pivot::Need) -> Result<pivot::Answer> {
        let sql = match &need {
            pivot::Need::Columns(sql) | pivot::Need::Values(sql) => sql,
        };
        let state = self.ctx.state();
        let plan = state.create_logical_plan(sql).await.map_err(|e| self.explain_error(e.into()))?;
        if let pivot::Need::Columns(_) = need {
            return Ok(pivot::Answer::Columns(plan.schema().fields().iter().map(|f| f.name().clone()).collect()));
        }
        if !self.allow_write {
            refuse_writes(&plan)?;
        }
        let batches = self.ctx.execute_logical_plan(plan).await?.collect().await.map_err(QueryError::from)?;
        let mut values = Vec::new();
        for batch in &batches {
            for row in 0..batch.num_rows() {
                values.push(datafusion::common::ScalarValue::try_from_array(batch.column(0), row)?);
            }
        }
        if values.len() > MAX_PIVOT_VALUES {
            return Err(QueryError::Invalid(format!(
                "PIVOT would make {} columns, more than {MAX_PIVOT_VALUES}: list the values to pivot on",
                values.len()
            )));
        }
        Ok(pivot::Answer::Values(values))
    }

    /// Adds the tables there are to a "table not found" error, and where the row
    /// numbers come from to an error naming one that is not there.
    fn explain_error(&self, error: QueryError) -> QueryError {
        let text = error.to_string();
        if text.contains("table '") && text.contains("not found") {
            let names = self.table_names();
            let shown = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            return QueryError::Invalid(format!("{text}; tables are: {shown}"));
        }
        if text.contains("No field named rowid") || text.contains("No field named i.") {
            return QueryError::Invalid(format!(
                "{text}\nThe row numbers `rowid` (DuckDB's, within the table) and `i` (kdb+'s, within each date \
                 partition) are columns of stored tables that `*` does not list: a subquery or CTE has them only \
                 where it selects them by name, and an in-memory (RDB) table has neither"
            ));
        }
        error
    }
}
