//! Running the `strata` binary: the helpers every end-to-end test uses.

use std::path::Path;
use std::process::{Command, Output};

/// The path of the binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_strata")
}

/// Runs `strata ARGS` to completion.
pub fn strata(args: &[&str]) -> Output {
    Command::new(binary()).args(args).output().expect("the strata binary runs")
}

/// Runs `strata ARGS`, asserts it succeeded and returns its standard output.
pub fn ok(args: &[&str]) -> String {
    let out = strata(args);
    assert!(
        out.status.success(),
        "strata {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `strata ARGS`, asserts it failed and returns its standard error.
pub fn fails(args: &[&str]) -> String {
    let out = strata(args);
    assert!(!out.status.success(), "strata {args:?} should fail");
    String::from_utf8(out.stderr).unwrap()
}

/// Runs `strata sql --db DB QUERY --format csv`.
pub fn sql(db: &Path, query: &str) -> Output {
    strata(&["sql", "--db", db.to_str().unwrap(), query, "--format", "csv"])
}

/// Standard error of a run that must fail cleanly: a `strata: error:` line, exit
/// status 1, no panic.
pub fn clean_failure(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("strata: error: "), "{err}");
    assert!(!err.contains("panicked") && !err.contains("internal error"), "{err}");
    err
}
