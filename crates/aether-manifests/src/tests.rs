//! The reader's tests: files of every shape, limits, directory walks.

use super::*;

const HOST: &str = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: a}\n";

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// One file's documents, as the reader reads each file.
fn read(file: &Path, limits: &Limits) -> Result<Vec<Document>, Error> {
    read::read_until(file, limits, std::time::Instant::now() + limits.max_settle_wait)
}

fn read_err(file: &Path, limits: &Limits) -> String {
    let e = read(file, limits).unwrap_err();
    assert_eq!(e.file, file);
    e.message
}

#[test]
fn yaml_documents_are_numbered_in_order_and_empty_ones_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "a.yaml", "---\na: 1\n---\n---\nb: 2\n---\n");
    let documents = read(&file, &Limits::default()).unwrap();
    let found: Vec<_> = documents.iter().map(|d| (d.index, d.value.clone())).collect();
    assert_eq!(
        found,
        [(0, serde_json::json!({"a": 1})), (1, serde_json::json!({"b": 2}))]
    );
    assert!(documents.iter().all(|d| d.file == file));
}

#[test]
fn json_files_hold_one_or_more_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "a.json", r#"{"a": 1} {"b": [2]}"#);
    let values: Vec<_> = read(&file, &Limits::default())
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect();
    assert_eq!(values, [serde_json::json!({"a": 1}), serde_json::json!({"b": [2]})]);
    let bad = write(dir.path(), "b.json", r#"{"a": "#);
    assert!(read_err(&bad, &Limits::default()).starts_with("invalid JSON: "));
}

#[test]
fn list_items_are_documents_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "list.yaml",
        "kind: List\nitems: [{a: 1}, {a: 2}]\n---\n{a: 3}\n",
    );
    let found: Vec<_> = read(&file, &Limits::default())
        .unwrap()
        .into_iter()
        .map(|d| (d.index, d.value["a"].as_i64().unwrap()))
        .collect();
    assert_eq!(found, [(0, 1), (1, 2), (2, 3)]);
    let bad = write(dir.path(), "bad.yaml", "kind: List\nitems: {a: 1}\n");
    assert!(read_err(&bad, &Limits::default()).contains("`kind: List` document needs an `items` list"));
}

#[test]
fn a_file_at_the_size_limit_is_read_and_one_byte_more_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_file_bytes: HOST.len() as u64,
        ..Limits::default()
    };
    let at = write(dir.path(), "at.yaml", HOST);
    assert_eq!(read(&at, &limits).unwrap().len(), 1);
    let over = write(dir.path(), "over.yaml", format!("{HOST}\n"));
    assert_eq!(
        read_err(&over, &limits),
        format!("larger than the {} byte limit", HOST.len())
    );
}

#[test]
fn invalid_utf8_names_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "a.yaml", b"kind: \xff\n");
    assert_eq!(
        read_err(&file, &Limits::default()),
        "not UTF-8: invalid byte at offset 6 (manifests must be UTF-8 text)"
    );
}

#[test]
fn a_file_without_documents_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("empty.yaml", ""),
        ("comments.yaml", "# nothing\n---\n"),
        ("empty.json", " \n"),
    ] {
        let file = write(dir.path(), name, text);
        assert_eq!(
            read_err(&file, &Limits::default()),
            "holds no document (empty, or only comments)",
            "{name}"
        );
    }
}

#[test]
fn nesting_beyond_the_depth_limit_is_an_error_in_yaml_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_depth: 3,
        ..Limits::default()
    };
    let ok = write(dir.path(), "ok.yaml", "a: {b: [1]}\n");
    assert_eq!(read(&ok, &limits).unwrap().len(), 1);
    let block = write(dir.path(), "block.yaml", "a:\n  b:\n    c:\n      d: 1\n");
    assert!(read_err(&block, &limits).starts_with("nested deeper than 3 levels (at line "));
    let json = write(dir.path(), "deep.json", r#"{"a": {"b": {"c": [1]}}}"#);
    assert_eq!(read_err(&json, &limits), "nested deeper than 3 levels");
    // A List counts whole, as in YAML: its items are 2 levels down.
    let list = write(dir.path(), "list.json", r#"{"kind": "List", "items": [{"a": [1]}]}"#);
    assert_eq!(read_err(&list, &limits), "nested deeper than 3 levels");
}

#[test]
fn document_node_and_alias_limits_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let small = Limits {
        max_documents: 2,
        max_nodes: 10,
        ..Limits::default()
    };
    let documents = write(dir.path(), "docs.yaml", "a: 1\n---\nb: 2\n---\nc: 3\n");
    assert!(read_err(&documents, &small).starts_with("more than 2 documents"));
    let list = write(dir.path(), "list.json", r#"{"kind": "List", "items": [1, 2, 3]}"#);
    assert_eq!(read_err(&list, &small), "more than 2 documents");
    let nodes = write(dir.path(), "nodes.yaml", "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n");
    assert!(read_err(&nodes, &small).starts_with("more than 10 YAML nodes"));
    // JSON has the same budget, counted before any value is built.
    let nodes = write(dir.path(), "nodes.json", "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n");
    assert_eq!(read_err(&nodes, &small), "more than 10 JSON nodes");
    let nodes = write(dir.path(), "nodes.json", "1 2 3 4 5 6 7 8 9 10 11\n");
    assert_eq!(read_err(&nodes, &small), "more than 10 JSON nodes");
    let few_aliases = Limits {
        max_aliases: 2,
        ..Limits::default()
    };
    let aliases = write(dir.path(), "aliases.yaml", "a: &a 1\nb: *a\nc: *a\nd: *a\n");
    assert!(read_err(&aliases, &few_aliases).starts_with("more than 2 YAML aliases"));
    let small_expansion = Limits {
        max_alias_expansion: 20,
        ..Limits::default()
    };
    // 2 aliases of 9 nodes each: 18 added, within 20; 3 would be 27.
    let within = write(
        dir.path(),
        "within.yaml",
        "a: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb: [*a, *a]\n",
    );
    assert_eq!(read(&within, &small_expansion).unwrap().len(), 1);
    let bomb = write(
        dir.path(),
        "bomb.yaml",
        "a: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb: [*a, *a, *a]\n",
    );
    let message = read_err(&bomb, &small_expansion);
    assert!(message.contains("alias replay limit exceeded"), "{message}");
}

#[test]
fn duplicate_keys_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "dup.yaml", "a: 1\na: 2\n");
    assert!(read_err(&file, &Limits::default()).contains("duplicate mapping key: a"));
}

#[test]
fn directories_are_walked_in_name_order_for_manifest_files_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let b = write(dir.path(), "b.yml", HOST);
    let a = write(dir.path(), "a.json", "{}");
    let c = write(&dir.path().join("sub"), "c.yaml", HOST);
    write(dir.path(), "notes.txt", "not a manifest");
    let (files, errors) = files(&[dir.path().to_path_buf()]);
    assert_eq!(files, [a, b, c]);
    assert!(errors.is_empty());
}

#[test]
fn every_bad_path_is_reported_and_the_good_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.txt", HOST);
    let missing = dir.path().join("missing.yaml");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (files, errors) = files(&[missing.clone(), good.clone(), empty.clone()]);
    // A named file is read whatever its extension.
    assert_eq!(files, [good]);
    let errors: Vec<_> = errors
        .iter()
        .map(|e| (e.file.clone(), e.message.clone(), e.failure))
        .collect();
    assert_eq!(errors.len(), 2);
    assert_eq!((&errors[0].0, errors[0].2), (&missing, Failure::Io));
    assert!(errors[0].1.starts_with("cannot read: "), "{}", errors[0].1);
    // Listed, and nothing there: what the directory holds is known.
    assert_eq!(
        errors[1],
        (
            empty,
            "directory holds no .yaml, .yml or .json file".to_owned(),
            Failure::Content
        )
    );
}

#[cfg(target_os = "linux")]
#[test]
fn an_unlistable_subdirectory_is_an_io_error_and_its_siblings_are_still_listed() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("b");
    std::fs::create_dir(&sub).unwrap();
    let a = write(dir.path(), "a.yaml", HOST);
    write(&sub, "b.yaml", HOST);
    let c = write(dir.path(), "c.yaml", HOST);
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o000)).unwrap();
    let (files, errors) = {
        let _unprivileged = testing::WithoutFileCapabilities::enter();
        files(&[dir.path().to_path_buf()])
    };
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(files, [a, c]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!((&errors[0].file, errors[0].failure), (&sub, Failure::Io));
    assert!(errors[0].message.starts_with("cannot list: "), "{}", errors[0].message);
}

#[test]
fn a_link_to_a_missing_manifest_is_an_io_error_and_links_to_directories_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    write(elsewhere.path(), "linked.yaml", HOST);
    let link = |target: &Path, name: &str| {
        let path = dir.path().join(name);
        std::os::unix::fs::symlink(target, &path).unwrap();
        path
    };
    let linked = link(&elsewhere.path().join("linked.yaml"), "a.yaml");
    let dangling = link(&elsewhere.path().join("gone.yaml"), "b.yaml");
    // Whatever these would lead to, they are not read.
    link(elsewhere.path(), "c");
    link(&elsewhere.path().join("gone"), "d");
    let (files, errors) = files(&[dir.path().to_path_buf()]);
    assert_eq!(files, [linked]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!((&errors[0].file, errors[0].failure), (&dangling, Failure::Io));
    assert!(errors[0].message.starts_with("cannot read: "), "{}", errors[0].message);
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_waiting_named_or_found_in_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("a.yaml");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let expected = "not a regular file (a FIFO): manifests are read from regular files only";
    // Named: listed, then refused when opened (no writer ever comes).
    let e = read(&fifo, &Limits::default()).unwrap_err();
    assert_eq!((e.message.as_str(), e.failure), (expected, Failure::Content));
    // In a directory: reported by the listing, never opened.
    let good = write(dir.path(), "b.yaml", HOST);
    let (files, errors) = files(&[dir.path().to_path_buf()]);
    assert_eq!(files, [good]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!((&errors[0].file, errors[0].message.as_str()), (&fifo, expected));
}

#[test]
fn an_atomic_writer_volume_lists_each_file_once_under_its_link_name() {
    let outer = tempfile::tempdir().unwrap();
    let volume = outer.path().join("volume");
    std::fs::create_dir(&volume).unwrap();
    testing::atomic_writer_volume(&volume, "1", &[("a.yaml", HOST), ("sub/b.yaml", HOST)]);
    let (listed, errors) = files(std::slice::from_ref(&volume));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(listed, [volume.join("a.yaml"), volume.join("sub/b.yaml")]);
    // The names read: through the links, what `..data` leads to.
    for file in &listed {
        assert_eq!(read(file, &Limits::default()).unwrap().len(), 1);
    }
    // Found inside a walked directory (a volume mounted in the manifest
    // directory), it is read the same way.
    let top = write(outer.path(), "a.yaml", HOST);
    let (nested, errors) = files(&[outer.path().to_path_buf()]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(nested, [vec![top], listed].concat());
}

/// Sets `file`'s modification time `age` in the past (or `now` itself).
fn modified_ago(file: &Path, age: std::time::Duration) {
    let handle = std::fs::File::options().write(true).open(file).unwrap();
    handle.set_modified(std::time::SystemTime::now() - age).unwrap();
}

#[test]
fn a_file_modified_within_the_settle_time_is_not_read_until_it_settles() {
    use std::time::Duration;

    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "a.yaml", HOST);
    // Nothing waits here: a file this fresh is given up on at once.
    let impatient = Limits {
        settle: Duration::from_secs(3600),
        max_settle_wait: Duration::ZERO,
        ..Limits::default()
    };
    modified_ago(&file, Duration::ZERO);
    let e = read(&file, &impatient).unwrap_err();
    assert_eq!(e.failure, Failure::Changing);
    assert_eq!(
        e.message,
        "not read: modified a moment ago, so possibly still being written; it is read once it has been left alone"
    );
    // Left alone for longer than the settle time: read.
    modified_ago(&file, Duration::from_secs(7200));
    assert_eq!(read(&file, &impatient).unwrap().len(), 1);
    // Within the wait allowed, a fresh file is waited for, then read (the
    // wait is bounded by the settle time, not measured).
    modified_ago(&file, Duration::ZERO);
    let patient = Limits {
        settle: Duration::from_millis(50),
        max_settle_wait: Duration::from_secs(60),
        ..Limits::default()
    };
    assert_eq!(read(&file, &patient).unwrap().len(), 1);
}

#[test]
fn the_largest_file_of_empty_routes_is_refused_before_it_is_built() {
    // 16 MiB of `{},`: 5.6 million nodes, in JSON and in YAML.
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits::default();
    let head = r#"{"apiVersion":"config.aether.io/v1","kind":"VirtualHost","metadata":{"name":"a"},"spec":{"hosts":["a.example.com"],"routes":["#;
    let count = (limits.max_file_bytes as usize - head.len() - 4) / 3;
    let text = format!("{head}{}{{}}]}}}}", "{},".repeat(count));
    assert!(text.len() as u64 <= limits.max_file_bytes);
    let json = write(dir.path(), "big.json", &text);
    assert_eq!(read_err(&json, &limits), "more than 250000 JSON nodes");
    let yaml = write(dir.path(), "big.yaml", &text);
    assert!(
        read_err(&yaml, &limits).starts_with("more than 250000 YAML nodes"),
        "{}",
        read_err(&yaml, &limits)
    );
}

#[cfg(unix)]
#[test]
fn read_bytes_refuses_a_fifo_or_device_unopened_and_reads_one_byte_past_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("tls.crt");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let e = read_bytes(&fifo, "secrets", 16).unwrap_err();
    assert_eq!(
        (e.message.as_str(), e.failure),
        (
            "not a regular file (a FIFO): secrets are read from regular files only",
            Failure::Content
        )
    );
    let e = read_bytes(Path::new("/dev/zero"), "secrets", 16).unwrap_err();
    assert!(e.message.contains("a character device"), "{}", e.message);
    let file = dir.path().join("tls.key");
    std::fs::write(&file, [b'x'; 16]).unwrap();
    assert_eq!(read_bytes(&file, "secrets", 16).unwrap().len(), 16);
    let e = read_bytes(&file, "secrets", 15).unwrap_err();
    assert_eq!(e.message, "larger than the 15 byte limit");
}
