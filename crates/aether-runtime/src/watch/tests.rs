//! Event sequences, each step with the changes it must make.

use super::*;

/// An object: namespace, name (empty: not storable), version.
type Obj = (&'static str, &'static str, u32);

fn convert(&(namespace, name, version): &Obj) -> Option<(ObjectKey, u32)> {
    (!name.is_empty()).then(|| (ObjectKey::new(namespace, name), version))
}

/// A change as text: `+ns/a` new, `~ns/a` changed, `-ns/a` removed.
fn text(change: &Change<u32>) -> String {
    match change {
        Change::Upserted { key, previous: None } => format!("+{key}"),
        Change::Upserted { key, previous: Some(_) } => format!("~{key}"),
        Change::Removed { key, .. } => format!("-{key}"),
    }
}

/// Applies each step's event in its scope, checking the changes it makes
/// and whether it completes a list; returns the mirror.
fn run(steps: &[(Scope, Event<Obj>, &[&str], bool)]) -> Mirror<u32> {
    let mut mirror = Mirror::new();
    for (i, (scope, event, changes, listed)) in steps.iter().enumerate() {
        let applied = mirror.apply(scope, event, convert);
        let found: Vec<String> = applied.changes.iter().map(text).collect();
        let found: Vec<&str> = found.iter().map(String::as_str).collect();
        assert_eq!(
            (found.as_slice(), applied.listed),
            (*changes, *listed),
            "step {i}: {event:?}"
        );
    }
    mirror
}

/// The mirror's objects as `ns/name=version`.
fn contents(mirror: &Mirror<u32>) -> Vec<String> {
    mirror.iter().map(|(key, version)| format!("{key}={version}")).collect()
}

const ALL: Scope = None;

#[test]
fn a_list_is_served_only_once_done() {
    let mirror = run(&[
        (ALL, Event::Init, &[], false),
        (ALL, Event::InitApply(("ns", "a", 1)), &[], false),
        (ALL, Event::InitApply(("ns", "b", 1)), &[], false),
        (ALL, Event::InitDone, &["+ns/a", "+ns/b"], true),
    ]);
    assert_eq!(contents(&mirror), ["ns/a=1", "ns/b=1"]);
    assert!(mirror.is_listed(&ALL));
}

#[test]
fn nothing_is_listed_before_init_done() {
    let mut mirror = Mirror::new();
    mirror.apply(&ALL, &Event::Init, convert);
    mirror.apply(&ALL, &Event::InitApply(("ns", "a", 1)), convert);
    assert!(!mirror.is_listed(&ALL));
    assert!(mirror.is_empty(), "a list in progress is not served");
}

#[test]
fn applies_and_deletes_change_what_differs() {
    let mirror = run(&[
        (ALL, Event::Init, &[], false),
        (ALL, Event::InitDone, &[], true),
        (ALL, Event::Apply(("ns", "a", 1)), &["+ns/a"], false),
        (ALL, Event::Apply(("ns", "a", 2)), &["~ns/a"], false),
        // The same object again (a status write echoed back, say): nothing.
        (ALL, Event::Apply(("ns", "a", 2)), &[], false),
        (ALL, Event::Apply(("ns", "b", 1)), &["+ns/b"], false),
        (ALL, Event::Delete(("ns", "a", 2)), &["-ns/a"], false),
        // Deleting what is not there: nothing.
        (ALL, Event::Delete(("ns", "a", 2)), &[], false),
    ]);
    assert_eq!(contents(&mirror), ["ns/b=1"]);
}

#[test]
fn a_relist_removes_what_it_lacks_and_keeps_serving_the_old_list_until_done() {
    let mut mirror = run(&[
        (ALL, Event::Init, &[], false),
        (ALL, Event::InitApply(("ns", "a", 1)), &[], false),
        (ALL, Event::InitApply(("ns", "b", 1)), &[], false),
        (ALL, Event::InitDone, &["+ns/a", "+ns/b"], true),
    ]);
    // The watch reconnects: a re-list without b, with a changed and c new.
    for event in [
        Event::Init,
        Event::InitApply(("ns", "a", 2)),
        Event::InitApply(("ns", "c", 1)),
    ] {
        assert!(mirror.apply(&ALL, &event, convert).changes.is_empty());
        assert_eq!(contents(&mirror), ["ns/a=1", "ns/b=1"], "the previous list serves");
    }
    let applied = mirror.apply(&ALL, &Event::InitDone, convert);
    let changes: Vec<String> = applied.changes.iter().map(text).collect();
    assert_eq!(changes, ["-ns/b", "~ns/a", "+ns/c"]);
    assert_eq!(contents(&mirror), ["ns/a=2", "ns/c=1"]);
}

#[test]
fn an_unchanged_relist_changes_nothing() {
    run(&[
        (ALL, Event::Init, &[], false),
        (ALL, Event::InitApply(("ns", "a", 1)), &[], false),
        (ALL, Event::InitDone, &["+ns/a"], true),
        (ALL, Event::Init, &[], false),
        (ALL, Event::InitApply(("ns", "a", 1)), &[], false),
        (ALL, Event::InitDone, &[], true),
    ]);
}

#[test]
fn a_restarted_list_drops_what_the_unfinished_one_gathered() {
    let mirror = run(&[
        (ALL, Event::Init, &[], false),
        (ALL, Event::InitApply(("ns", "a", 1)), &[], false),
        (ALL, Event::Init, &[], false),
        (ALL, Event::InitApply(("ns", "b", 1)), &[], false),
        (ALL, Event::InitDone, &["+ns/b"], true),
    ]);
    assert_eq!(contents(&mirror), ["ns/b=1"]);
}

#[test]
fn a_relist_of_one_namespace_leaves_the_others_alone() {
    let (one, two): (Scope, Scope) = (Some("one".into()), Some("two".into()));
    let mirror = run(&[
        (one.clone(), Event::Init, &[], false),
        (one.clone(), Event::InitApply(("one", "a", 1)), &[], false),
        (one.clone(), Event::InitApply(("one", "b", 1)), &[], false),
        (one.clone(), Event::InitDone, &["+one/a", "+one/b"], true),
        (two.clone(), Event::Init, &[], false),
        (two.clone(), Event::InitApply(("two", "a", 1)), &[], false),
        (two.clone(), Event::InitDone, &["+two/a"], true),
        // one's watch reconnects; two/a is not one's to remove.
        (one.clone(), Event::Init, &[], false),
        (one.clone(), Event::InitApply(("one", "a", 1)), &[], false),
        (one.clone(), Event::InitDone, &["-one/b"], true),
    ]);
    assert_eq!(contents(&mirror), ["one/a=1", "two/a=1"]);
    assert!(mirror.is_listed(&one) && mirror.is_listed(&two) && !mirror.is_listed(&None));
}

#[test]
fn interleaved_lists_of_two_scopes_are_gathered_apart() {
    let (one, two): (Scope, Scope) = (Some("one".into()), Some("two".into()));
    let mirror = run(&[
        (one.clone(), Event::Init, &[], false),
        (two.clone(), Event::Init, &[], false),
        (one.clone(), Event::InitApply(("one", "a", 1)), &[], false),
        (two.clone(), Event::InitApply(("two", "a", 1)), &[], false),
        (two.clone(), Event::InitDone, &["+two/a"], true),
        (one.clone(), Event::InitDone, &["+one/a"], true),
    ]);
    assert_eq!(contents(&mirror), ["one/a=1", "two/a=1"]);
}

#[test]
fn objects_the_conversion_leaves_out_change_nothing() {
    let mirror = run(&[
        (ALL, Event::Init, &[], false),
        (ALL, Event::InitApply(("ns", "", 1)), &[], false),
        (ALL, Event::InitApply(("ns", "a", 1)), &[], false),
        (ALL, Event::InitDone, &["+ns/a"], true),
        (ALL, Event::Apply(("ns", "", 2)), &[], false),
        (ALL, Event::Delete(("ns", "", 2)), &[], false),
    ]);
    assert_eq!(contents(&mirror), ["ns/a=1"]);
}

#[test]
fn init_done_without_init_lists_nothing_as_kube_runtime_does() {
    run(&[
        (ALL, Event::Apply(("ns", "a", 1)), &["+ns/a"], false),
        (ALL, Event::InitDone, &["-ns/a"], true),
    ]);
}
