//! `aetherctl diff` on changes of `examples/match-regex.yaml`
//! (`tests/diff/`): a route moved, a regex route added above a prefix, an
//! older object taking the host. Each names the routes that change and the
//! requests whose outcome changes (the real-Envoy suite sends those
//! requests through Envoy before and after).

use std::path::{Path, PathBuf};
use std::process::Command;

use aetherctl::diff::{EXIT_DIFFERENT, EXIT_SAME};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/match-regex.yaml")
}

fn changed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff").join(name)
}

fn diff(args: &[&str]) -> (u8, String, String) {
    let mut all = vec!["aetherctl", "diff"];
    all.extend_from_slice(args);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = aetherctl::run(all, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

#[test]
fn each_change_names_its_routes_and_the_requests_it_moves() {
    let old = example();
    let mut all = String::new();
    for name in ["route-moved.yaml", "regex-added.yaml", "host-taken.yaml"] {
        let new = changed(name);
        let (code, out, err) = diff(&["-f", old.to_str().unwrap(), "-f", new.to_str().unwrap()]);
        assert_eq!((code, err.as_str()), (EXIT_DIFFERENT, ""), "{name}\n{out}");
        all.push_str(&format!("# {name}\n{out}\n"));
    }
    insta::assert_snapshot!(all);
}

#[test]
fn the_same_manifests_change_nothing_and_exit_0() {
    let old = example();
    let (code, out, err) = diff(&["-f", old.to_str().unwrap(), "-f", old.to_str().unwrap()]);
    assert_eq!((code, out.as_str(), err.as_str()), (EXIT_SAME, "no host changes\n", ""));
    let (code, out, _) = diff(&["-o", "json", "-f", old.to_str().unwrap(), "-f", old.to_str().unwrap()]);
    assert_eq!((code, out.trim()), (EXIT_SAME, "[]"));
}

#[test]
fn json_names_the_witness_and_both_outcomes() {
    let (old, new) = (example(), changed("regex-added.yaml"));
    let (code, out, _) = diff(&["-o", "json", "-f", old.to_str().unwrap(), "-f", new.to_str().unwrap()]);
    assert_eq!(code, EXIT_DIFFERENT);
    let hosts: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(hosts[0]["routes"][0]["change"], "added");
    let witness = &hosts[0]["witnesses"][0];
    assert_eq!(witness["old"]["clusters"][0]["cluster"], "svc-web");
    assert_eq!(witness["new"]["clusters"][0]["cluster"], "svc-static");
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn against_a_revision_reads_the_old_side_from_git() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path().join("manifests");
    std::fs::create_dir(&dir).unwrap();
    git(repo.path(), &["init", "-q"]);
    std::fs::copy(example(), dir.join("users.yaml")).unwrap();
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-qm", "users"]);
    std::fs::copy(changed("route-moved.yaml"), dir.join("users.yaml")).unwrap();
    let (code, out, err) = diff(&["--against", "HEAD", "-f", dir.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (EXIT_DIFFERENT, ""), "{out}");
    assert!(out.contains("GET http://users.example.org/users/0\n"), "{out}");
    // A file new since the revision: its hosts are new.
    std::fs::copy(changed("regex-added.yaml"), dir.join("users.yaml")).unwrap();
    std::fs::rename(dir.join("users.yaml"), dir.join("renamed.yaml")).unwrap();
    let file = dir.join("renamed.yaml");
    let (code, out, err) = diff(&["--against", "HEAD", "-f", file.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (EXIT_DIFFERENT, ""), "{out}");
    assert!(
        out.starts_with("users.example.org: now served by default/users\n"),
        "{out}"
    );
    // The committed file, unchanged at HEAD: nothing moves.
    std::fs::rename(&file, dir.join("users.yaml")).unwrap();
    git(repo.path(), &["checkout", "-q", "--", "manifests/users.yaml"]);
    let (code, out, _) = diff(&["--against", "HEAD", "-f", dir.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (EXIT_SAME, "no host changes\n"));
}

#[test]
fn usage_and_revision_errors_exit_2() {
    let old = example();
    let (code, _, err) = diff(&["-f", old.to_str().unwrap()]);
    assert_eq!(code, aetherctl::EXIT_ERROR);
    assert!(err.contains("diff takes `-f OLD -f NEW`"), "{err}");
    let (code, _, err) = diff(&["--against", "no-such-revision", "-f", old.to_str().unwrap()]);
    assert_eq!(code, aetherctl::EXIT_ERROR);
    assert!(err.contains("no-such-revision"), "{err}");
}

/// A revision is never read as an option by git: one starting with `-` is
/// refused before git runs (git's own `--output=FILE` would write FILE).
#[test]
fn a_revision_starting_with_a_dash_is_refused_before_git_runs() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path().join("manifests");
    std::fs::create_dir(&dir).unwrap();
    git(repo.path(), &["init", "-q"]);
    std::fs::copy(example(), dir.join("users.yaml")).unwrap();
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-qm", "users"]);
    let written = repo.path().join("written");
    for revision in [
        format!("--output={}", written.display()),
        "-p".to_owned(),
        String::new(),
    ] {
        let against = format!("--against={revision}");
        let (code, out, err) = diff(&[&against, "-f", dir.to_str().unwrap()]);
        assert_eq!((code, out.as_str()), (aetherctl::EXIT_ERROR, ""), "{revision}: {err}");
        assert!(
            err.starts_with(&format!("error: --against {revision:?}: not a git revision")),
            "{revision}: {err}"
        );
        assert!(!err.contains("git ls-tree"), "git ran: {err}");
    }
    assert!(!written.exists());
}
