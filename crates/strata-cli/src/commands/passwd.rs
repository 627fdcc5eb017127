//! `strata passwd FILE USER`: sets a user's password in a credentials file. The
//! password is read without echo from the terminal (asked twice), or from the first
//! line of standard input when that is not a terminal (scripts, tests); never from
//! the command line, where `ps` shows it to every user of the machine.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

use clap::Args;

use super::CliResult;

/// Arguments of `strata passwd`.
#[derive(Args)]
pub struct PasswdArgs {
    /// The credentials file (created, readable by its owner only, if missing).
    file: PathBuf,
    /// The user whose password to set (added if missing).
    user: String,
}

/// Reads the password and writes the user's argon2id entry.
pub fn run(args: PasswdArgs) -> CliResult {
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password(format!("password for {}: ", args.user))?;
        let again = rpassword::prompt_password("again: ")?;
        if first != again {
            return Err("the two passwords differ; nothing changed".into());
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        line.trim_end_matches(['\n', '\r']).to_string()
    };
    strata_ipc::credentials::set_password(&args.file, &args.user, &password)?;
    eprintln!("{}: password of {} set (argon2id)", args.file.display(), args.user);
    Ok(())
}
