//! The keep-last-good policy on real files.

use super::*;

fn host(name: &str) -> String {
    format!(
        "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: {name}}}\n\
         spec: {{hosts: [{name}.example.com], routes: [{{match: {{prefix: /}}, backend: {{service: web}}}}]}}\n"
    )
}

fn names(load: &Load) -> Vec<String> {
    load.objects.iter().map(|l| l.object.name.clone()).collect()
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_file_that_cannot_be_read_keeps_its_objects_until_it_can_or_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    write(&a, &format!("{}---\n{}", host("a1"), host("a2")));
    write(&b, &host("b"));
    let paths = [dir.path().to_path_buf()];
    let mut store = LastGood::new();
    let first = store.load(&paths, &Limits::default());
    assert_eq!(
        (names(&first), first.errors.len()),
        (vec!["a1".into(), "a2".into(), "b".into()], 0)
    );

    // One document of a.yaml stops decoding: a.yaml keeps both objects.
    write(&a, &format!("{}---\nkind: Pod\n", host("a1")));
    let broken = store.load(&paths, &Limits::default());
    assert_eq!(names(&broken), names(&first));
    assert_eq!(broken.stale, std::slice::from_ref(&a));
    assert_eq!(broken.errors.len(), 1, "{:?}", broken.errors);
    assert_eq!(
        (broken.errors[0].file.as_path(), broken.errors[0].document),
        (a.as_path(), Some(1))
    );

    // Still broken on the next read: still kept.
    assert_eq!(names(&store.load(&paths, &Limits::default())), names(&first));

    // Repaired: what it holds now.
    write(&a, &host("a3"));
    let repaired = store.load(&paths, &Limits::default());
    assert_eq!(
        (names(&repaired), repaired.stale.len()),
        (vec!["a3".into(), "b".into()], 0)
    );

    // Deleted (the listing succeeds without it): gone.
    std::fs::remove_file(&a).unwrap();
    assert_eq!(names(&store.load(&paths, &Limits::default())), ["b"]);
}

#[test]
fn a_file_is_read_again_only_when_its_stamp_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a.yaml"),
        dir.path().join("b.yaml"),
        dir.path().join("c.yaml"),
    );
    write(&a, &host("a"));
    write(
        &b,
        &format!(
            "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: other}}\n",
            host("b")
        ),
    );
    write(&c, "spec: [unclosed");
    let paths = [dir.path().to_path_buf()];
    let limits = Limits {
        other_kinds: crate::OtherKinds::Skip,
        ..Limits::default()
    };
    let mut store = LastGood::new();
    let first = store.load(&paths, &limits);
    assert_eq!(
        (names(&first), first.unchanged.len()),
        (vec!["a".into(), "b".into()], 0)
    );

    // Nothing changed: the files read whole are not read again, and give
    // the same objects and skipped documents; the broken one is read
    // again (its error is reported on every load).
    let second = store.load(&paths, &limits);
    assert_eq!(second.unchanged, [a.clone(), b.clone()]);
    assert_eq!(
        (&second.objects, &second.skipped, second.errors.len()),
        (&first.objects, &first.skipped, 1)
    );

    // Rewritten with the same size: read again.
    write(&a, &host("z"));
    let third = store.load(&paths, &limits);
    assert_eq!(third.unchanged, std::slice::from_ref(&b));
    assert_eq!(names(&third), ["z", "b"]);

    // Replaced by a rename (a new inode, as Kubernetes' volumes do): read again.
    let next = dir.path().join("next.tmp");
    write(&next, &host("bb"));
    std::fs::rename(&next, &b).unwrap();
    let fourth = store.load(&paths, &limits);
    assert_eq!(fourth.unchanged, std::slice::from_ref(&a));
    assert_eq!(names(&fourth), ["z", "bb"]);
    assert!(fourth.skipped.is_empty());

    // Repaired: read, and from then on unchanged.
    write(&c, &host("c"));
    assert_eq!(names(&store.load(&paths, &limits)), ["z", "bb", "c"]);
    assert_eq!(store.load(&paths, &limits).unchanged, [a, b, c]);
}

#[test]
fn the_objects_of_a_file_not_read_again_share_the_specs_it_gave() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    write(&a, &host("a"));
    write(&b, &host("b"));
    let paths = [dir.path().to_path_buf()];
    let mut store = LastGood::new();
    let first = store.load(&paths, &Limits::default());
    write(&b, &host("bb"));
    let second = store.load(&paths, &Limits::default());
    assert_eq!(second.unchanged, std::slice::from_ref(&a));
    let spec = |load: &Load, i: usize| std::sync::Arc::clone(&load.objects[i].object.spec);
    assert!(
        std::sync::Arc::ptr_eq(&spec(&first, 0), &spec(&second, 0)),
        "a's spec was copied"
    );
    assert!(!std::sync::Arc::ptr_eq(&spec(&first, 1), &spec(&second, 1)));
    assert_eq!(second.objects[1].object.spec.hosts, ["bb.example.com"]);
}

#[test]
fn without_waiting_a_file_not_settled_keeps_its_objects_and_is_set_aside_after_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    write(&a, &host("a"));
    write(&b, &host("b"));
    let paths = [dir.path().to_path_buf()];
    let mut store = LastGood::without_waiting();
    // A settle time of 0: every file is settled.
    let settled = Limits {
        settle: Duration::ZERO,
        ..Limits::default()
    };
    assert_eq!(names(&store.load(&paths, &settled)), ["a", "b"]);

    // a.yaml changes, and counts as changing for an hour: this load
    // does not wait on it, and a.yaml gives its last objects, no error.
    write(&a, &host("a2"));
    let changing = Limits {
        settle: Duration::from_secs(3600),
        max_settle_wait: Duration::from_millis(300),
        ..Limits::default()
    };
    let started = Instant::now();
    let pending = store.load(&paths, &changing);
    assert!(
        started.elapsed() < Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (names(&pending), pending.errors.len(), pending.stale.len()),
        (vec!["a".into(), "b".into()], 0, 0)
    );
    let due = store.set_aside_due().unwrap();
    assert!(due > started && due <= Instant::now() + Duration::from_millis(300));
    // Polled, it counts as unchanged while it keeps changing.
    let stamp = store.stamp(&paths, changing.settle);
    assert_eq!(stamp[0], (a.clone(), None));
    assert!(stamp[1].1.is_some());
    assert_eq!(store.stamp(&paths, Duration::ZERO)[0].1, FileStamp::of(&a));
    // Left alone since (a settle time of zero): the next load must read it,
    // whatever stamp the poller took before this one.
    assert!(!store.settled_since_load(changing.settle));
    assert!(store.settled_since_load(Duration::ZERO));

    // Past its bound: set aside, reported, its last objects kept.
    std::thread::sleep(due.saturating_duration_since(Instant::now()));
    let set_aside = store.load(&paths, &changing);
    assert_eq!(names(&set_aside), ["a", "b"]);
    assert_eq!(set_aside.stale, std::slice::from_ref(&a));
    assert_eq!(set_aside.errors.len(), 1, "{:?}", set_aside.errors);
    assert_eq!(set_aside.errors[0].failure, Failure::Changing);
    assert!(
        set_aside.errors[0]
            .message
            .starts_with("set aside: it has not been left alone for 3600000 ms in "),
        "{}",
        set_aside.errors[0]
    );
    assert_eq!(store.set_aside_due(), None);

    // Left alone: read.
    let read = store.load(&paths, &settled);
    assert_eq!((names(&read), read.errors.len()), (vec!["a2".into(), "b".into()], 0));
    assert!(store.stamp(&paths, changing.settle)[0].1.is_some());
}

#[test]
fn a_path_that_cannot_be_listed_keeps_every_file_under_it() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("manifests");
    std::fs::create_dir(&dir).unwrap();
    write(&dir.join("a.yaml"), &host("a"));
    write(&dir.join("b.yaml"), &host("b"));
    let paths = [dir.clone()];
    let mut store = LastGood::new();
    assert_eq!(names(&store.load(&paths, &Limits::default())), ["a", "b"]);
    std::fs::rename(&dir, parent.path().join("away")).unwrap();
    let away = store.load(&paths, &Limits::default());
    assert_eq!(names(&away), ["a", "b"]);
    assert_eq!(away.stale, [dir.join("a.yaml"), dir.join("b.yaml")]);
    assert_eq!((away.errors.len(), away.errors[0].failure), (1, Failure::Io));
}

#[test]
fn a_file_never_read_whole_gives_what_it_can_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.yaml");
    write(&a, &format!("{}---\nkind: Pod\n", host("a1")));
    let mut store = LastGood::new();
    let paths = [a.clone()];
    let partial = store.load(&paths, &Limits::default());
    assert_eq!(
        (names(&partial), partial.errors.len(), partial.stale.len()),
        (vec!["a1".into()], 1, 0)
    );
    write(&a, "spec: [unclosed");
    let broken = store.load(&paths, &Limits::default());
    assert_eq!((names(&broken), broken.stale.clone()), (vec!["a1".into()], vec![a]));
}

#[test]
fn of_two_copies_the_first_in_path_order_is_kept_even_when_it_is_a_kept_one() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    write(&a, &host("x"));
    write(&b, &host("y"));
    let paths = [dir.path().to_path_buf()];
    let mut store = LastGood::new();
    store.load(&paths, &Limits::default());
    // a.yaml breaks, and b.yaml now also holds `x`: a.yaml's kept copy wins.
    write(&a, "spec: [unclosed");
    write(&b, &host("x").replace("web", "other"));
    let load = store.load(&paths, &Limits::default());
    assert_eq!(load.objects.len(), 1);
    assert_eq!(load.objects[0].file, a);
    let duplicate = load.errors.iter().find(|e| e.failure == Failure::Duplicate).unwrap();
    assert_eq!(
        duplicate.to_string(),
        format!(
            "{}: document 0: VirtualHost default/x is also in {} (document 0), the copy used",
            b.display(),
            a.display()
        )
    );
}

#[test]
fn a_file_named_twice_gives_its_objects_once_and_keeps_them_when_it_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.yaml");
    write(&a, &host("a1"));
    // The directory and the file in it: two paths reaching one file.
    let paths = [dir.path().to_path_buf(), a.clone()];
    let mut store = LastGood::new();
    let first = store.load(&paths, &Limits::default());
    assert_eq!((names(&first), first.errors.len()), (vec!["a1".into()], 0));
    assert_eq!(names(&store.load(&paths, &Limits::default())), ["a1"]);

    write(&a, "spec: [unclosed");
    let broken = store.load(&paths, &Limits::default());
    assert_eq!(names(&broken), ["a1"], "{:?}", broken.errors);
    assert_eq!(broken.stale, std::slice::from_ref(&a));
}
