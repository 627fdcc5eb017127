//! Progress bars of the long commands: none when standard error is not a terminal
//! (standard output exactly what scripts read), a bar with an ETA when it is one.

use std::process::{Command, Stdio};

use super::common::*;

/// The commands that report progress, run with standard error piped: nothing on
/// it, and standard output as scripts parse it.
#[test]
fn long_commands_draw_nothing_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("trades.csv");
    let rows: String = (0..3000).map(|i| format!("s{},{}.25,{i}\n", i % 5, i % 90)).collect();
    std::fs::write(&csv, format!("sym,price,size\n{rows}")).unwrap();
    let db = dir.path().join("hdb");
    let (db_arg, csv_arg) = (db.to_str().unwrap(), csv.to_str().unwrap());
    let silent = |args: &[&str]| {
        let out = strata(args);
        assert!(out.status.success(), "strata {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "strata {args:?} wrote to a piped stderr");
        String::from_utf8(out.stdout).unwrap()
    };

    let day = ["--table", "trade", "--partition", "2025.01.02"];
    let imported = silent(&[&["import", csv_arg, "--db", db_arg][..], &day].concat());
    let table_dir = db.join("2025.01.02").join("trade");
    assert_eq!(
        imported,
        format!(
            "imported 3000 rows x 3 columns from {csv_arg} into {}\nrecorded the schema of table trade in {}\n",
            table_dir.display(),
            db.join("trade.schema").display()
        )
    );
    let appended = silent(&[&["import", csv_arg, "--db", db_arg][..], &day, &["--mode", "append"]].concat());
    assert_eq!(
        appended,
        format!(
            "appended 3000 rows x 3 columns from {csv_arg} to {}: 3000 rows before, 6000 after\n",
            table_dir.display()
        )
    );
    for out in ["out.csv", "out.parquet"] {
        let out = dir.path().join(out);
        let exported = silent(&[&["export", "--db", db_arg][..], &day, &["--out", out.to_str().unwrap()]].concat());
        assert_eq!(exported, format!("exported 6000 rows to {}\n", out.display()));
    }
    let compressed = silent(&["compress", table_dir.to_str().unwrap(), "--spec", "zstd:1", "--no-fsync"]);
    assert!(compressed.contains("trade/price") && compressed.contains("zstd:1"), "{compressed}");
    let verified = silent(&["verify", "--db", db_arg]);
    assert!(verified.starts_with("verified ") && verified.ends_with("0 damaged, 0 notes\n"), "{verified}");
    let taq = dir.path().join("taq");
    let generated =
        silent(&["gen", "taq", "--db", taq.to_str().unwrap(), "--quotes", "3000", "--trades", "300", "--syms", "10"]);
    assert!(generated.starts_with("wrote 3000 quotes and 300 trades") && generated.lines().count() == 1, "{generated}");
}

/// `strata gen taq` with standard error on a pseudo-terminal (python3's `pty`,
/// which the test suite needs anyway) draws its steps as bars with an ETA, and
/// standard output (a pipe) still holds only the result.
#[test]
fn gen_draws_bars_with_an_eta_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("taq");
    // Runs argv[1:] with stderr on a pty and copies what reaches the pty to its own
    // stdout; the child's stdout goes to this script's stderr.
    let script = r#"
import os, pty, subprocess, sys
master, slave = pty.openpty()
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=slave)
os.close(slave)
seen = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # Linux: EIO once the child closed the pty
        break
    if not chunk:
        break
    seen += chunk
sys.stdout.buffer.write(seen)
sys.exit(child.wait())
"#;
    let out = Command::new("python3")
        .args(["-c", script, binary(), "gen", "taq", "--db", db.to_str().unwrap()])
        .args(["--quotes", "50000", "--trades", "5000", "--syms", "50"])
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs");
    let (terminal, result) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{terminal}\n{result}");
    assert!(result.starts_with("wrote 50000 quotes and 5000 trades") && result.lines().count() == 1, "{result}");
    for step in ["generating quotes", "generating trades", "writing quote", "writing tradeNorm"] {
        assert!(terminal.contains(step), "no bar for {step:?} on the terminal: {terminal:?}");
    }
    assert!(terminal.contains("ETA") && terminal.contains("rows"), "{terminal:?}");
    assert!(terminal.contains("\u{1b}["), "bars are redrawn in place with escape codes: {terminal:?}");
}
