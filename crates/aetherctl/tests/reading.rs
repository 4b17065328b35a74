//! The reading faults of issue 12, through the binary: each input that once
//! hung it, or made it report the wrong thing, gives a clear answer.

mod common;

use std::path::Path;

use common::{aetherctl, proposal, write};

/// Makes a FIFO at `path` (nothing ever writes to it).
#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A FIFO named on the command line is refused, by every command, without
/// waiting for a writer (`open()` on a FIFO blocks until one comes; the run
/// is bounded, so a hang fails the test).
#[cfg(unix)]
#[test]
fn a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.yaml");
    mkfifo(&fifo);
    let good = write(dir.path(), "good.yaml", proposal());
    for command in [
        vec!["validate"],
        vec!["project"],
        vec!["status"],
        vec!["admit"],
        vec!["admit", "--stored", fifo.to_str().unwrap(), good.to_str().unwrap()],
    ] {
        let mut args: Vec<&str> = command.clone();
        if args.len() == 1 {
            args.push(fifo.to_str().unwrap());
        }
        let run = aetherctl(&args);
        assert_eq!(run.code, 2, "{command:?}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr
                .contains(&format!("error: {}: not a regular file (a FIFO)", fifo.display())),
            "{command:?}: {}",
            run.stderr
        );
    }
}

/// A FIFO in a directory is not read either: it is reported, and the
/// directory's other manifests are read.
#[cfg(unix)]
#[test]
fn a_fifo_in_a_directory_is_reported_and_the_rest_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("a.yaml");
    mkfifo(&fifo);
    let good = write(dir.path(), "b.yaml", proposal());
    let run = aetherctl(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains(&format!("error: {}: not a regular file (a FIFO)", fifo.display())),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout
            .contains(&format!("{}: document 0: default/api: valid", good.display())),
        "{}",
        run.stdout
    );
}
