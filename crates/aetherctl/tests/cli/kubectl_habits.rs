//! `aetherctl` as kubectl users type it, through the real binary: `-o
//! text|json|yaml` on every command, `-f FILE` (repeatable) and `-f -`,
//! mixed manifest streams, shell completions, `--version`.

use std::path::Path;

use serde_json::Value;

use crate::common::{SIXTEEN_MIB, aetherctl, aetherctl_with_stdin, proposal, write};

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .to_str()
        .unwrap()
        .to_owned()
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn yaml(stdout: &str) -> Value {
    serde_saphyr::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// What `kustomize build` writes for an app and its edge: other kinds
/// around VirtualHosts (one invalid), one of each inside a List.
fn mixed_stream() -> String {
    let invalid = proposal()
        .replace("name: api", "name: broken")
        .replace("api.example.com", "API.example.com");
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings}}\ndata: {{a: b}}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec: {{replicas: 2}}\n---\n\
         {}---\n{invalid}---\n\
         apiVersion: v1\nkind: List\nitems:\n- {{apiVersion: v1, kind: Service, metadata: {{name: web}}}}\n",
        proposal()
    )
}

#[test]
fn dash_o_gives_text_json_and_yaml_in_every_report_command() {
    let proposal = example("proposal.yaml");
    let storefront = example("storefront.yaml");
    for (command, summary) in [
        (vec!["validate", &proposal], "1 object(s): 1 valid, 0 invalid"),
        (
            vec!["admit", "--stored", &proposal, &storefront],
            "2 object(s): 1 admitted, 1 denied",
        ),
        (vec!["status", &storefront], "2 object(s): 1 fully served, 1 not"),
    ] {
        let text = aetherctl(&[command.as_slice(), &["-o", "text"]].concat());
        assert!(text.stdout.contains(summary), "{command:?}: {}", text.stdout);
        let by_default = aetherctl(&command);
        assert_eq!(by_default.stdout, text.stdout, "{command:?}: text is the default");
        let as_json = aetherctl(&[command.as_slice(), &["-o", "json"]].concat());
        let as_yaml = aetherctl(&[command.as_slice(), &["--output", "yaml"]].concat());
        assert_eq!((as_json.code, as_yaml.code), (text.code, text.code), "{command:?}");
        let (as_json, as_yaml) = (json(&as_json.stdout), yaml(&as_yaml.stdout));
        // The same document in both forms, but for times stamped `now`.
        if command[0] != "status" {
            assert_eq!(as_json, as_yaml, "{command:?}");
        } else {
            assert_eq!(as_json["objects"].as_array().unwrap().len(), 2);
            assert_eq!(
                as_json["objects"][1]["status"]["conditions"][0]["reason"],
                "HostConflict"
            );
            assert_eq!(
                as_yaml["objects"][1]["status"]["conditions"][0]["reason"],
                "HostConflict"
            );
        }
        assert_eq!(as_json["skipped"], serde_json::json!([]), "{command:?}");
    }
}

#[test]
fn project_takes_dash_o_and_its_old_format_flag_still_works() {
    let examples = example("");
    let as_yaml = aetherctl(&["project", &examples]);
    assert_eq!(as_yaml.code, 0, "{}", as_yaml.stderr);
    let as_json = aetherctl(&["project", "-o", "json", &examples]);
    assert_eq!(yaml(&as_yaml.stdout), json(&as_json.stdout));
    let explicit_yaml = aetherctl(&["project", "-o", "yaml", &examples]);
    assert_eq!(explicit_yaml.stdout, as_yaml.stdout);
    // The former flag, kept for scripts; hidden from the help.
    let old = aetherctl(&["project", "--format", "json", &examples]);
    assert_eq!(old.stdout, as_json.stdout);
    assert!(!aetherctl(&["project", "--help"]).stdout.contains("--format"));
    let both = aetherctl(&["project", "--format", "json", "-o", "yaml", &examples]);
    assert_eq!(both.code, 2, "{}", both.stderr);

    let text = aetherctl(&["project", "-o", "text", &examples]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    for line in [
        "default/api: api.example.com",
        "  prefix /users -> svc-users:8080",
        "  exact /healthz -> svc-health",
        "conflict: host shop.example.com: served by shop/storefront, not shop/storefront-canary",
        "left out: shop/storefront-canary: every host went to an older object",
        "  regex /users/[0-9]+(/.*)? -> svc-users:8080",
        // The actions: a split, a 500, rewrites, redirects, header
        // changes, a timeout, retries.
        "  prefix /api -> svc-api:8080 (90), svc-api-canary (10)",
        "  prefix /drained -> answer 500",
        "  prefix /api -> svc-api; rewrite prefix /v2",
        "  exact /status -> svc-health; rewrite path /healthz; rewrite host health.internal",
        "  prefix /old -> redirect 301 https://new.example.com:8443 prefix /new",
        "  prefix /secure -> redirect 302 https://HOST:443",
        "  exact /moved -> redirect 308 path /here",
        "  prefix / -> svc-web; request headers: set x-team=a, set x-discount=50%, add x-via=edge, remove x-debug; \
         response headers: set cache-control=no-store, add x-served-by=edge, remove x-internal",
        "  prefix /slow -> svc-slow; timeout 1s",
        "  prefix /flaky -> svc-flaky; timeout 15s; retries 3 on connect-failure,refused-stream,5xx, per try 2s",
        "14 virtual host(s), 43 route(s), 25 backend service(s), 3 TLS secret(s); 2 host conflict(s), 2 left out",
    ] {
        assert!(
            text.stdout.lines().any(|l| l == line),
            "no `{line}` in:\n{}",
            text.stdout
        );
    }
    assert!(
        text.stdout
            .lines()
            .any(|l| l.starts_with("left out: sandbox/broken: invalid: spec.hosts[0]: ")),
        "{}",
        text.stdout
    );
}

#[test]
fn crd_prints_yaml_or_json() {
    let as_yaml = aetherctl(&["crd"]);
    assert_eq!(as_yaml.code, 0);
    assert_eq!(as_yaml.stdout, aether_api::CRD_YAML);
    assert_eq!(aetherctl(&["crd", "-o", "text"]).stdout, as_yaml.stdout);
    let as_json = aetherctl(&["crd", "-o", "json"]);
    assert_eq!(as_json.code, 0);
    assert_eq!(json(&as_json.stdout), yaml(&as_yaml.stdout));
    assert_eq!(json(&as_json.stdout)["kind"], "CustomResourceDefinition");
}

#[test]
fn dash_f_is_a_file_repeatable_and_read_before_the_paths() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", proposal().replace("name: api", "name: a"));
    let b = write(dir.path(), "b.yaml", proposal().replace("name: api", "name: b"));
    let c = write(dir.path(), "c.yaml", proposal().replace("name: api", "name: c"));
    let (a, b, c) = (a.to_str().unwrap(), b.to_str().unwrap(), c.to_str().unwrap());
    let run = aetherctl(&["validate", c, "-f", a, "--filename", b, "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = json(&run.stdout);
    let names: Vec<&str> = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    for command in ["validate", "project", "status", "admit"] {
        let run = aetherctl(&[command, "-f", a]);
        assert!(run.code == 0 || run.code == 1, "{command}: {}", run.stderr);
        // Neither -f nor a PATH: a usage error naming what is missing.
        let none = aetherctl(&[command]);
        assert_eq!(none.code, 2, "{command}");
        assert!(none.stderr.contains("<PATH>"), "{command}: {}", none.stderr);
    }
    // The old trap: `project -f json` now reads a file named `json`.
    let trap = aetherctl(&["project", "-f", "json"]);
    assert_eq!(trap.code, 2);
    assert!(trap.stderr.starts_with("error: json: cannot "), "{}", trap.stderr);
}

#[test]
fn dash_f_dash_reads_standard_input_in_every_command() {
    let run = aetherctl_with_stdin(&["validate", "-f", "-"], proposal());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "<stdin>: document 0: default/api: valid\n1 object(s): 1 valid, 0 invalid (0 violation(s)); 0 error(s)\n"
    );
    // As a PATH too; JSON when it starts with `{` (here two values).
    let object = serde_json::to_string(&yaml(&proposal())).unwrap();
    let run = aetherctl_with_stdin(
        &["validate", "-"],
        format!("  {object}\n{}", object.replace("\"api\"", "\"b\"")),
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("<stdin>: document 1: default/b: valid"),
        "{}",
        run.stdout
    );

    let run = aetherctl_with_stdin(&["project", "-o", "text", "-f", "-"], proposal());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("default/api: api.example.com\n"),
        "{}",
        run.stdout
    );
    let run = aetherctl_with_stdin(&["status", "-f", "-"], proposal());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("<stdin>: document 0: default/api: Accepted=True (Accepted)"),
        "{}",
        run.stdout
    );
    // The stored objects from standard input, the reviewed ones from a file.
    let dir = tempfile::tempdir().unwrap();
    let rival = write(dir.path(), "rival.yaml", proposal().replace("name: api", "name: rival"));
    let run = aetherctl_with_stdin(&["admit", "--stored", "-", "-f", rival.to_str().unwrap()], proposal());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("host \"api.example.com\" is already claimed by VirtualHost default/api"),
        "{}",
        run.stdout
    );
}

#[test]
fn standard_input_can_be_given_once() {
    for args in [
        vec!["validate", "-f", "-", "-"],
        vec!["admit", "--stored", "-", "-f", "-"],
        vec!["project", "-f", "-", "-f", "-"],
    ] {
        let run = aetherctl_with_stdin(&args, proposal());
        assert_eq!(run.code, 2, "{args:?}");
        assert_eq!(
            run.stderr,
            "error: standard input (`-`) is given more than once: it can be read only once\n"
        );
        assert_eq!(run.stdout, "");
    }
}

#[test]
fn standard_input_is_bounded_like_a_file() {
    // A valid manifest padded with a comment to exactly the limit is read...
    let mut at = proposal();
    at.push('#');
    at.push_str(&"x".repeat(SIXTEEN_MIB - at.len() - 1));
    at.push('\n');
    assert_eq!(at.len(), SIXTEEN_MIB);
    let run = aetherctl_with_stdin(&["validate", "-f", "-"], &at);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // ...one byte more is not, and is read no further.
    at.push('\n');
    let run = aetherctl_with_stdin(&["validate", "-f", "-"], &at);
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, "error: <stdin>: larger than the 16777216 byte limit\n");
    // Standard input that is no text, and nothing at all.
    let run = aetherctl_with_stdin(&["validate", "-f", "-"], b"kind: \xff\n");
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: <stdin>: not UTF-8: invalid byte at offset 6"),
        "{}",
        run.stderr
    );
    let run = aetherctl_with_stdin(&["validate", "-f", "-"], b"");
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: <stdin>: holds no document (empty, or only comments)\n"
    );
}

#[test]
fn a_mixed_stream_validates_the_virtualhosts_and_skips_the_rest_with_a_note() {
    let run = aetherctl_with_stdin(&["validate", "-f", "-"], mixed_stream());
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stderr,
        "skipped: <stdin>: document 0: ConfigMap settings (v1): not a VirtualHost\n\
         skipped: <stdin>: document 1: Deployment web (apps/v1): not a VirtualHost\n\
         skipped: <stdin>: document 4: Service web (v1): not a VirtualHost\n"
    );
    assert!(
        run.stdout.contains("<stdin>: document 2: default/api: valid\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("<stdin>: document 3: default/broken: spec.hosts[0]: does not match regex pattern"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .ends_with("2 object(s): 1 valid, 1 invalid (1 violation(s)); 0 error(s)\n")
    );

    let run = aetherctl_with_stdin(&["validate", "-o", "json", "-f", "-"], mixed_stream());
    assert_eq!((run.code, run.stderr.as_str()), (1, ""));
    let report = json(&run.stdout);
    assert_eq!(
        report["skipped"][1],
        serde_json::json!({"file": "<stdin>", "document": 1, "apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
    );
    assert_eq!(report["skipped"].as_array().unwrap().len(), 3);
    assert_eq!(report["objects"].as_array().unwrap().len(), 2);

    // The same stream in a file, and through the other commands.
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "all.yaml", mixed_stream());
    let file = file.to_str().unwrap();
    for (command, code) in [
        (vec!["validate"], 1),
        (vec!["project"], 0),
        (vec!["status"], 1),
        (vec!["admit"], 1),
    ] {
        let run = aetherctl(&[command.as_slice(), &[file]].concat());
        assert_eq!(run.code, code, "{command:?}: {}", run.stderr);
        assert_eq!(
            run.stderr.lines().filter(|l| l.starts_with("skipped: ")).count(),
            3,
            "{command:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("error:"), "{command:?}: {}", run.stderr);
    }
    // What may be a VirtualHost typed wrong is an error, not skipped.
    let typo = proposal().replace("config.aether.io/v1", "config.aether.io/v1beta1");
    let run = aetherctl_with_stdin(&["validate", "-f", "-"], typo);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: <stdin>: document 0: apiVersion: expected"),
        "{}",
        run.stderr
    );
}

#[test]
fn version_prints_the_name_and_the_crate_version() {
    for flag in ["--version", "-V"] {
        let run = aetherctl(&[flag]);
        assert_eq!(run.code, 0);
        assert_eq!(run.stdout, format!("aetherctl {}\n", env!("CARGO_PKG_VERSION")));
    }
}

#[test]
fn completion_scripts_name_every_command_and_bash_parses_them() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = aetherctl(&["completion", shell]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        for word in [
            "aetherctl",
            "validate",
            "project",
            "admit",
            "status",
            "crd",
            "completion",
            "filename",
        ] {
            assert!(run.stdout.contains(word), "{shell}: no `{word}`");
        }
    }
    let unknown = aetherctl(&["completion", "tcsh"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stderr
            .contains("possible values: bash, elvish, fish, powershell, zsh"),
        "{}",
        unknown.stderr
    );

    // The bash script is valid bash: `bash -n` parses it without running it.
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), "aetherctl.bash", aetherctl(&["completion", "bash"]).stdout);
    let checked = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
    // And it completes: the words offered after `aetherctl va`.
    let completed = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(aetherctl va); COMP_CWORD=1; _aetherctl aetherctl va aetherctl; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&completed.stdout).trim(), "validate");
}
