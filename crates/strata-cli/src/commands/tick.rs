//! `strata tp`, `rdb`, `hdb`, `ctp` and `feed`: argument parsing for the tick plane;
//! the processes themselves live in strata-tick.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use strata_ipc::Credentials;
use strata_ipc::tls::{self, ClientTls, ServerTls, TlsMode};
use strata_tick::chained::{self, ChainedConfig};
use strata_tick::clock::Clock;
use strata_tick::feed::{self, FeedConfig, FeedTable};
use strata_tick::hdb::{self, HdbConfig};
use strata_tick::journal::{FsyncPolicy, Recovery, WriteMode};
use strata_tick::pubsub::SlowPolicy;
use strata_tick::rdb::{self, RdbConfig};
use strata_tick::schema::Schema;
use strata_tick::sql::QueryLimits;
use strata_tick::tickerplant::{self, TickerplantConfig};

use super::CliResult;

/// The user a client process logs in as; its password never on the command line.
#[derive(Args)]
pub struct UserArgs {
    /// User name sent to the servers this process connects to (the name only: the
    /// password comes from --password-file or STRATA_PASSWORD).
    #[arg(long, default_value = "")]
    user: String,
    /// File whose first line is the password, or `user:password`.
    #[arg(long)]
    password_file: Option<PathBuf>,
    /// Connect to the servers over TLS, as if each address said `tcps://host:port`.
    #[arg(long)]
    tls: bool,
    /// PEM file of the CAs whose server certificates to trust over TLS (kdb+'s
    /// SSL_CA_CERT_FILE, which is read when this is not given).
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    /// PEM certificate chain shown to servers that require client certificates.
    #[arg(long, requires_all = ["tls_ca", "tls_client_key"])]
    tls_client_cert: Option<PathBuf>,
    /// PEM private key of --tls-client-cert.
    #[arg(long, requires = "tls_client_cert")]
    tls_client_key: Option<PathBuf>,
}

/// The environment variable a client process takes its password (or
/// `user:password`) from when no --password-file is given.
const PASSWORD_ENV: &str = "STRATA_PASSWORD";

impl UserArgs {
    /// The `user:password` to send.
    fn user_password(&self) -> Result<String, Box<dyn std::error::Error>> {
        let secret = match &self.password_file {
            Some(path) => {
                Some(std::fs::read_to_string(path).map_err(|e| format!("--password-file {}: {e}", path.display()))?)
            }
            None => std::env::var(PASSWORD_ENV).ok(),
        };
        Ok(strata_ipc::handshake::login(&self.user, secret.as_deref())?)
    }

    /// `addr` as this process connects to it: with `tcps://` under --tls. Also
    /// makes --tls-ca and the client certificate what every `tcps://` connection
    /// of the process uses.
    fn address(&self, addr: String) -> Result<String, Box<dyn std::error::Error>> {
        if let Some(ca) = &self.tls_ca {
            let identity = self.tls_client_cert.as_deref().zip(self.tls_client_key.as_deref());
            tls::set_default_client(ClientTls::load(ca, identity)?);
        }
        Ok(if self.tls && !tls::split_address(&addr).1 { format!("{}{addr}", tls::TLS_SCHEME) } else { addr })
    }
}

/// Options every server shares.
#[derive(Args)]
pub struct ServeArgs {
    /// Interface to listen on: loopback unless told otherwise (e.g. `0.0.0.0` for
    /// every interface; then give --credentials, or the server warns at start).
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// File of `user:secret` lines (an argon2 hash from `strata passwd`, or kdb+'s
    /// MD5 digest or plain password); when given, other users are refused.
    #[arg(long)]
    credentials: Option<PathBuf>,
    /// Connections kept open at once; clients past it are refused and logged.
    #[arg(long, default_value_t = strata_tick::server::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// PEM certificate chain: serve kdb+ IPC over TLS (with --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// PEM file of CAs: clients must show a certificate one of them signed.
    #[arg(long, requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// With --tls-cert: `required` (TLS only, as kdb+'s -E 2; plain clients are
    /// refused) or `optional` (TLS and plain on the same port, as -E 1).
    #[arg(long, default_value = "required")]
    tls_mode: TlsMode,
}

impl ServeArgs {
    /// The address to listen on; also sets the process's connection bound, which
    /// every server started afterwards applies.
    fn listen(&self, port: u16) -> String {
        strata_tick::server::set_max_connections(self.max_connections);
        format!("{}:{port}", self.bind)
    }

    fn credentials(&self) -> Result<Option<Credentials>, Box<dyn std::error::Error>> {
        Ok(self.credentials.as_deref().map(Credentials::load).transpose()?)
    }

    fn tls(&self) -> Result<Option<ServerTls>, Box<dyn std::error::Error>> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else { return Ok(None) };
        Ok(Some(ServerTls::load(cert, key, self.tls_client_ca.as_deref(), self.tls_mode)?))
    }
}

/// Arguments of `strata tp`.
#[derive(Args)]
pub struct TpArgs {
    /// Schema file: one table per line, `name time:timespan sym:symbol col:type ...`.
    #[arg(long)]
    schema: PathBuf,
    /// Directory for the daily journals `<schema>YYYY.MM.DD`; omit to journal nothing.
    #[arg(long)]
    journal_dir: Option<PathBuf>,
    /// Port to listen on.
    #[arg(long, default_value_t = 5010)]
    port: u16,
    /// Publish every T milliseconds instead of per update (kdb+tick's -t).
    #[arg(long)]
    batch_ms: Option<u64>,
    /// Journal writes: `group` (one write per batch of updates read together) or
    /// `update` (one write per update, as kdb+ does).
    #[arg(long, default_value = "group", value_parser = ["update", "group"])]
    write: String,
    /// fsync policy: `none`, `ack` (before answering sync callers), or a period such as `100ms`.
    #[arg(long, default_value = "none")]
    fsync: FsyncPolicy,
    /// A journal damaged inside (a bad record with valid ones after it): `refuse` to
    /// start, naming the record and offset, or `skip`: copy the bad bytes to a side
    /// file `<journal>.damaged-<offset>` and keep every valid record. (A torn tail is
    /// always copied to `<journal>.torn-<offset>` and cut.)
    #[arg(long, default_value = "refuse")]
    journal_recovery: Recovery,
    /// Minutes added to UTC for the day boundary (kdb+tick's -o, in minutes).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    utc_offset_minutes: i32,
    /// Bytes a subscriber's queue may hold before the policy applies.
    #[arg(long, default_value_t = 64 << 20)]
    subscriber_queue_bytes: usize,
    /// What to do with a subscriber whose queue is full: `disconnect` or `drop`.
    #[arg(long, default_value = "disconnect")]
    slow_subscriber: SlowPolicy,
    /// Add the publish time to each published update so subscribers can time the hop.
    #[arg(long)]
    hop_times: bool,
    /// Distinct new symbols each publisher (user and address) may add in a day; an update past it is refused
    /// and counted (symbolsRefused). 0: no bound.
    #[arg(long, default_value_t = strata_tick::new_symbols::DEFAULT_MAX_NEW_SYMBOLS)]
    max_new_symbols: usize,
    #[command(flatten)]
    serve: ServeArgs,
}

/// Runs `strata tp` until it is killed.
pub fn run_tp(args: TpArgs) -> CliResult {
    let schema = Schema::load(&args.schema)?;
    let mut config = TickerplantConfig::new(schema, args.journal_dir);
    config.listen = args.serve.listen(args.port);
    config.batch = args.batch_ms.filter(|&ms| ms > 0).map(Duration::from_millis);
    config.write_mode = if args.write == "group" { WriteMode::Group } else { WriteMode::PerUpdate };
    config.fsync = args.fsync;
    config.journal_recovery = args.journal_recovery;
    config.clock = Clock { offset_minutes: args.utc_offset_minutes };
    config.credentials = args.serve.credentials()?;
    config.tls = args.serve.tls()?;
    config.subscriber_limit = args.subscriber_queue_bytes;
    config.slow_policy = args.slow_subscriber;
    config.hop_times = args.hop_times;
    config.max_new_symbols = (args.max_new_symbols > 0).then_some(args.max_new_symbols);
    tickerplant::start(config)?.join()?;
    Ok(())
}

/// Arguments of `strata rdb`.
#[derive(Args)]
pub struct RdbArgs {
    /// The tickerplant, host:port (tcps://host:port for TLS).
    #[arg(long, default_value = "127.0.0.1:5010")]
    tp: String,
    /// The HDB root that end of day writes into.
    #[arg(long)]
    db: PathBuf,
    /// Port to answer queries on.
    #[arg(long, default_value_t = 5011)]
    port: u16,
    /// HDBs (host:port, comma-separated) to tell to reload after end of day.
    #[arg(long, value_delimiter = ',')]
    hdb: Vec<String>,
    /// Compression at end of day: a table spec file, or a directory of `<table>.toml`.
    #[arg(long)]
    table_spec: Option<PathBuf>,
    // How to log in to the tickerplant and HDBs.
    #[command(flatten)]
    login: UserArgs,
    #[command(flatten)]
    queries: QueryArgs,
    #[command(flatten)]
    serve: ServeArgs,
}

/// What one query may take on an RDB or HDB.
#[derive(Args)]
pub struct QueryArgs {
    /// MiB that one SQL statement may hold for sorts, aggregations, joins, the answer being gathered and the
    /// strings functions such as repeat() make (0: no limit).
    #[arg(long, default_value_t = 1024)]
    query_memory_mb: usize,
    /// Seconds one SQL statement may run before it is stopped with an error (0: no limit).
    #[arg(long, default_value_t = strata_tick::sql::DEFAULT_QUERY_TIMEOUT.as_secs())]
    query_timeout: u64,
    /// SQL statements run at once, from different clients (each client's in the order it sent them).
    #[arg(long, default_value_t = strata_tick::sql::DEFAULT_QUERY_THREADS)]
    query_threads: usize,
}

impl QueryArgs {
    fn limits(&self) -> QueryLimits {
        QueryLimits {
            memory: (self.query_memory_mb > 0).then_some(self.query_memory_mb << 20),
            timeout: (self.query_timeout > 0).then(|| Duration::from_secs(self.query_timeout)),
            threads: self.query_threads.max(1),
        }
    }
}

/// Runs `strata rdb` until it is killed (it rides out tickerplant restarts).
pub fn run_rdb(args: RdbArgs) -> CliResult {
    let hdbs = args.hdb.into_iter().map(|hdb| args.login.address(hdb)).collect::<Result<_, _>>()?;
    let handle = rdb::start(RdbConfig {
        tp: args.login.address(args.tp)?,
        user_password: args.login.user_password()?,
        db: args.db,
        listen: Some(args.serve.listen(args.port)),
        credentials: args.serve.credentials()?,
        tls: args.serve.tls()?,
        hdbs,
        table_spec: args.table_spec,
        queries: args.queries.limits(),
    })?;
    handle.join()?;
    Ok(())
}

/// Arguments of `strata hdb`.
#[derive(Args)]
pub struct HdbArgs {
    /// The database root.
    #[arg(long)]
    db: PathBuf,
    /// Port to answer queries on.
    #[arg(long, default_value_t = 5012)]
    port: u16,
    #[command(flatten)]
    queries: QueryArgs,
    #[command(flatten)]
    serve: ServeArgs,
}

/// Runs `strata hdb` until it is killed.
pub fn run_hdb(args: HdbArgs) -> CliResult {
    let handle = hdb::start(HdbConfig {
        db: args.db,
        listen: args.serve.listen(args.port),
        credentials: args.serve.credentials()?,
        tls: args.serve.tls()?,
        queries: args.queries.limits(),
    })?;
    handle.join();
    Ok(())
}

/// Arguments of `strata ctp`.
#[derive(Args)]
pub struct CtpArgs {
    /// The upstream tickerplant, host:port (tcps://host:port for TLS).
    #[arg(long, default_value = "127.0.0.1:5010")]
    tp: String,
    /// Port to listen on.
    #[arg(long, default_value_t = 5110)]
    port: u16,
    /// Publish every T milliseconds instead of per update.
    #[arg(long)]
    batch_ms: Option<u64>,
    // How to log in upstream.
    #[command(flatten)]
    login: UserArgs,
    /// Bytes a subscriber's queue may hold before the policy applies.
    #[arg(long, default_value_t = 64 << 20)]
    subscriber_queue_bytes: usize,
    /// What to do with a subscriber whose queue is full: `disconnect` or `drop`.
    #[arg(long, default_value = "disconnect")]
    slow_subscriber: SlowPolicy,
    #[command(flatten)]
    serve: ServeArgs,
}

/// Runs `strata ctp` until it is killed (it rides out upstream restarts).
pub fn run_ctp(args: CtpArgs) -> CliResult {
    let handle = chained::start(ChainedConfig {
        upstream: args.login.address(args.tp)?,
        user_password: args.login.user_password()?,
        listen: args.serve.listen(args.port),
        batch: args.batch_ms.filter(|&ms| ms > 0).map(Duration::from_millis),
        credentials: args.serve.credentials()?,
        tls: args.serve.tls()?,
        subscriber_limit: args.subscriber_queue_bytes,
        slow_policy: args.slow_subscriber,
    })?;
    handle.join();
    Ok(())
}

/// Arguments of `strata feed` (the feed simulator of KX's tickerplant profiling).
#[derive(Args)]
pub struct FeedArgs {
    /// The tickerplant, host:port (tcps://host:port for TLS).
    #[arg(long, default_value = "127.0.0.1:5010")]
    tp: String,
    /// TAQ table to send: `trade` (`time sym ex price size`) or `quote` (`time sym ex
    /// bid bsize ask asize`), plus the extra columns `col0`, `col1`, ...
    #[arg(long, default_value = "trade")]
    table: FeedTable,
    /// Rows per update (r).
    #[arg(long, default_value_t = 1)]
    rows: usize,
    /// Updates per timer tick (u).
    #[arg(long, default_value_t = 1)]
    updates: usize,
    /// Timer period in milliseconds (t).
    #[arg(long, default_value_t = 1)]
    timer_ms: u64,
    /// Extra float columns (ex).
    #[arg(long, default_value_t = 0)]
    extra_cols: usize,
    /// Stop after this many seconds (default: until the tickerplant goes away).
    #[arg(long)]
    seconds: Option<f64>,
    /// Stop after this many updates.
    #[arg(long)]
    max_updates: Option<u64>,
    /// Send updates synchronously, each acknowledged by the tickerplant.
    #[arg(long)]
    sync: bool,
    /// Seed of the generated TAQ day the rows come from.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Rows of the generated day to cycle through.
    #[arg(long, default_value_t = 100_000)]
    pool_rows: usize,
    /// Print the tickerplant schema line for this table and these extra columns, and exit.
    #[arg(long)]
    print_schema: bool,
    /// Send each row's time (UTC time of day) instead of letting the tickerplant add it.
    #[arg(long)]
    stamp_time: bool,
    // How to log in to the tickerplant.
    #[command(flatten)]
    login: UserArgs,
}

/// Runs `strata feed` and prints what it sent.
pub fn run_feed(args: FeedArgs) -> CliResult {
    if args.print_schema {
        println!("{}", args.table.schema_line(args.extra_cols));
        return Ok(());
    }
    let config = FeedConfig {
        tp: args.login.address(args.tp)?,
        user_password: args.login.user_password()?,
        table: args.table,
        rows: args.rows.max(1),
        updates: args.updates,
        timer: Duration::from_millis(args.timer_ms.max(1)),
        extra_columns: args.extra_cols,
        duration: args.seconds.map(Duration::from_secs_f64),
        max_updates: args.max_updates,
        sync: args.sync,
        seed: args.seed,
        pool_rows: args.pool_rows.max(1),
        stamp_time: args.stamp_time,
    };
    let report = feed::run(&config, |_| {})?;
    println!(
        "feed: {} updates, {} rows in {:.2} s ({:.0} rows/s); acknowledged {}, refused {}; stopped: {}",
        report.updates,
        report.rows,
        report.seconds,
        report.rows as f64 / report.seconds.max(1e-9),
        report.acknowledged,
        report.refused,
        report.stopped
    );
    Ok(())
}
