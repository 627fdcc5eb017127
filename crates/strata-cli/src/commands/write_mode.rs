//! `--mode`: what a writing command does with a table that is already there.

use clap::ValueEnum;
use strata_store::WriteMode;

/// `--mode` of `import` and `gen taq`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Refuse when the table is there.
    Fail,
    /// Append the rows (attributes the new rows break are dropped, and said).
    Append,
    /// Replace the table.
    Replace,
}

impl From<Mode> for WriteMode {
    fn from(mode: Mode) -> WriteMode {
        match mode {
            Mode::Fail => WriteMode::Fail,
            Mode::Append => WriteMode::Append,
            Mode::Replace => WriteMode::Replace,
        }
    }
}
