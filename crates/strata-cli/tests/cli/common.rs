//! Running the `strata` binary: the helpers every end-to-end test uses.

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
