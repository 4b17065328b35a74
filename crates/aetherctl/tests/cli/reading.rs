//! The reading faults, through the binary: each input that once
//! hung it, or made it report the wrong thing, gives a clear answer.

use std::path::Path;

use crate::common::{aetherctl, proposal, write};

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

/// A ConfigMap mounted as a volume: each file is read once, under the name
/// its link gives it, and a nested item (`items[].path: sub/c.yaml`) too.
#[cfg(unix)]
#[test]
fn a_configmap_volume_is_read_as_one_copy_of_each_file() {
    let dir = tempfile::tempdir().unwrap();
    let proposal = proposal();
    let web = proposal
        .replace("name: api", "name: web")
        .replace("api.example.com", "web.example.com");
    let other = proposal
        .replace("name: api", "name: other")
        .replace("api.example.com", "other.example.com");
    aether_manifests::testing::atomic_writer_volume(
        dir.path(),
        "1",
        &[("a.yaml", &proposal), ("b.yaml", &web), ("sub/c.yaml", &other)],
    );
    let run = aetherctl(&["project", "--format", "json", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let snapshot: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let names: Vec<&str> = snapshot["routeConfiguration"]["virtualHosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|host| host["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default/api", "default/other", "default/web"]);

    let run = aetherctl(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let at = |name: &str, key: &str| format!("{}: document 0: {key}: valid", dir.path().join(name).display());
    assert_eq!(
        run.stdout,
        format!(
            "{}\n{}\n{}\n3 object(s): 3 valid, 0 invalid (0 violation(s)); 0 error(s)\n",
            at("a.yaml", "default/api"),
            at("b.yaml", "default/web"),
            at("sub/c.yaml", "default/other")
        )
    );

    // The next version: what `..data` leads to now, each file once.
    aether_manifests::testing::atomic_writer_volume(dir.path(), "2", &[("a.yaml", &proposal), ("b.yaml", &other)]);
    let run = aetherctl(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .ends_with("2 object(s): 2 valid, 0 invalid (0 violation(s)); 0 error(s)\n"),
        "{}",
        run.stdout
    );
}

/// The proposal with one value of the wrong type, and the violation the API
/// server's schema would report for it.
fn type_errors() -> Vec<(String, &'static str)> {
    let proposal = proposal();
    let port = "spec.routes[0].backend.port: must be an integer from 0 to 65535, got";
    vec![
        (proposal.replace("port: 8080", "port: -1"), "-1"),
        (proposal.replace("port: 8080", "port: 8080.0"), "8080.0"),
        (proposal.replace("port: 8080", "port: 4294967296"), "4294967296"),
        // An unknown enum value (`provider: VAULT`) is a violation for
        // `validate` only; `project` and `status` read it as from a newer API
        // version, unsupported: see skew.rs.
    ]
    .into_iter()
    .map(|(text, got)| {
        let expected: &'static str = Box::leak(format!("{port} {got} [type]").into_boxed_str());
        (text, expected)
    })
    .collect()
}

/// A value of the wrong type is a violation of the object, named by its
/// path with the type and range expected, as the API server reports it:
/// exit 1 (`validate`, `status`, `admit`), and a left-out invalid object in
/// `project` (exit 0), never "does not decode" and exit 2.
#[test]
fn a_type_error_is_a_violation_of_the_object_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    for (text, expected) in type_errors() {
        let file = write(dir.path(), "api.yaml", &text);
        let file = file.to_str().unwrap();

        let run = aetherctl(&["validate", file]);
        assert_eq!((run.code, run.stderr.as_str()), (1, ""), "{expected}: {}", run.stdout);
        assert!(
            run.stdout
                .contains(&format!("{file}: document 0: default/api: {expected}\n")),
            "{expected}: {}",
            run.stdout
        );

        let run = aetherctl(&["project", "--format", "json", file]);
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{expected}");
        let snapshot: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let left_out = &snapshot["report"]["leftOut"][0];
        assert_eq!(
            (&left_out["object"], &left_out["reason"]),
            (&"default/api".into(), &"invalid".into())
        );
        let problem = &left_out["problems"][0];
        let rendered = format!(
            "{}: {} [{}]",
            problem["fieldPath"].as_str().unwrap(),
            problem["message"].as_str().unwrap(),
            problem["ruleId"].as_str().unwrap()
        );
        assert_eq!(rendered, expected);

        let run = aetherctl(&["status", file]);
        assert_eq!((run.code, run.stderr.as_str()), (1, ""), "{expected}: {}", run.stdout);
        assert!(
            run.stdout
                .contains("default/api: Accepted=False (Invalid), 0 route(s): left out: "),
            "{}",
            run.stdout
        );

        let run = aetherctl(&["admit", file]);
        assert_eq!((run.code, run.stderr.as_str()), (1, ""), "{expected}: {}", run.stdout);
        assert!(
            run.stdout
                .contains("default/api: CREATE denied: VirtualHost is invalid: "),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains(expected), "{expected}: {}", run.stdout);
    }
}
