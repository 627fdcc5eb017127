//! Every command's help shows how it is used: at least one example.

use super::common::*;

/// The subcommands a `--help` page lists under "Commands:" (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_command_shows_an_example() {
    let mut pending: Vec<Vec<String>> = subcommands(&ok(&["--help"])).into_iter().map(|c| vec![c]).collect();
    assert!(pending.len() > 15, "{pending:?}");
    let mut checked = 0;
    while let Some(command) = pending.pop() {
        let args: Vec<&str> = command.iter().map(String::as_str).chain(["--help"]).collect();
        let help = ok(&args);
        let nested = subcommands(&help);
        for sub in &nested {
            pending.push(command.iter().cloned().chain([sub.clone()]).collect());
        }
        // A group without options of its own (`bench`, `gen`) shows its commands' examples.
        if nested.is_empty() || help.contains("Options:\n      --") {
            let example = help.split("Examples:\n").nth(1).and_then(|examples| examples.lines().next());
            assert!(
                example.is_some_and(|line| line.contains("strata ")),
                "strata {} --help has no example:\n{help}",
                command.join(" ")
            );
        }
        checked += 1;
    }
    assert!(checked > 30, "{checked} commands checked");
}

/// The binary is linked at a fixed address (see `build.rs`): a position-independent
/// one pays ~6 ms of relocations at every start. ELF's `e_type` (bytes 16-17) is 2
/// for a fixed-address executable, 3 for a PIE.
#[cfg(target_os = "linux")]
#[test]
fn the_binary_starts_without_relocating_itself() {
    use std::io::Read;
    if std::env::var("STRATA_PIE").is_ok_and(|v| v == "1") {
        return;
    }
    let mut header = [0u8; 18];
    std::fs::File::open(binary()).unwrap().read_exact(&mut header).unwrap();
    assert_eq!(&header[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([header[16], header[17]]), 2, "e_type: 2 is a fixed-address executable");
}
