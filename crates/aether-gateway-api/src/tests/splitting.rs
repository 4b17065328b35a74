//! More routes than one HTTPRoute holds: the split, and the names of its parts.

use super::*;

/// More routes than one HTTPRoute holds: several, in route order, named
/// so that a tie goes to the earlier.
#[test]
fn many_routes_are_split_over_httproutes_in_order() {
    let routes: Vec<_> = (0..40)
        .map(|index| route(Path::Exact(format!("/r{index}")), "web", 80))
        .collect();
    let conversion = convert("ns", "big", &spec(routes), Some(&gateway()), &mut Names::default());
    let names: Vec<_> = conversion
        .routes
        .iter()
        .map(|route| route.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["big", "big-02", "big-03"]);
    let paths: Vec<String> = conversion
        .routes
        .iter()
        .flat_map(|route| route.spec.rules.clone().unwrap())
        .map(|rule| rule.matches.unwrap()[0].path.clone().unwrap().value.unwrap())
        .collect();
    assert_eq!(paths, (0..40).map(|index| format!("/r{index}")).collect::<Vec<_>>());
    assert!(
        conversion
            .routes
            .iter()
            .all(|route| route.spec.rules.as_ref().unwrap().len() <= MAX_RULES)
    );
    assert!(notes_of(&conversion).contains(&("spec.routes", NoteKind::Differs)));
    // Nine methods a route: the match budget splits before the rule count.
    let mut routes: Vec<_> = (0..15)
        .map(|index| route(Path::Exact(format!("/m{index}")), "web", 80))
        .collect();
    for routed in &mut routes {
        routed.r#match.as_mut().unwrap().methods = [
            "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
        ]
        .map(String::from)
        .to_vec();
    }
    let conversion = convert("ns", "m", &spec(routes), Some(&gateway()), &mut Names::default());
    for route in &conversion.routes {
        let matches: usize = route
            .spec
            .rules
            .as_ref()
            .unwrap()
            .iter()
            .map(|rule| rule.matches.as_ref().unwrap().len())
            .sum();
        assert!(matches <= MAX_MATCHES, "{matches}");
    }
    assert_eq!(conversion.routes.len(), 2);
}

fn names_of(conversion: &Conversion) -> Vec<String> {
    conversion
        .routes
        .iter()
        .map(|route| route.metadata.name.clone().unwrap())
        .collect()
}

fn many_routes(count: usize) -> VirtualHostSpec {
    spec(
        (0..count)
            .map(|index| route(Path::Exact(format!("/r{index}")), "web", 80))
            .collect(),
    )
}

/// A split never takes the name of another VirtualHost converted in the same
/// run, nor one an earlier split took; each rename is noted.
#[test]
fn split_names_never_collide_with_other_objects_of_the_run() {
    let mut names = Names::default();
    for name in ["web", "web-02", "other"] {
        names.reserve("ns", name);
    }
    let web = convert("ns", "web", &many_routes(17), Some(&gateway()), &mut names);
    let taken = convert("ns", "web-02", &many_routes(17), Some(&gateway()), &mut names);
    assert_eq!(names_of(&web), ["web", "web-02-2"]);
    assert_eq!(names_of(&taken), ["web-02", "web-02-02"]);
    let note = web
        .notes
        .iter()
        .find(|note| note.message.contains("web-02-2"))
        .expect("the rename is noted");
    assert_eq!((note.path.as_str(), note.kind), ("spec.routes", NoteKind::Differs));
    assert!(note.message.contains("ns/web-02"), "{}", note.message);
    // Another namespace has names of its own.
    let elsewhere = convert("other-ns", "web", &many_routes(17), Some(&gateway()), &mut names);
    assert_eq!(names_of(&elsewhere), ["web", "web-02"]);
}

/// An HTTPRoute's name is a DNS subdomain of at most 253 characters: a long
/// name is cut before its suffix, and the cut is noted.
#[test]
fn split_names_stay_within_253_characters() {
    let long = "a".repeat(252);
    let mut names = Names::default();
    names.reserve("ns", &long);
    let conversion = convert("ns", &long, &many_routes(40), Some(&gateway()), &mut names);
    let written = names_of(&conversion);
    assert_eq!(written.len(), 3);
    assert_eq!(written[0], long);
    for (name, suffix) in written[1..].iter().zip(["-02", "-03"]) {
        assert_eq!(name.len(), 253, "{name}");
        assert!(name.ends_with(suffix) && name.starts_with("aaa"), "{name}");
    }
    // A cut that ends in `-` or `.` loses it: a name ends with a letter or digit.
    let dotted = format!("{}.b-", "a".repeat(249));
    let mut names = Names::default();
    let conversion = convert("ns", &dotted[..251], &many_routes(17), Some(&gateway()), &mut names);
    assert_eq!(names_of(&conversion)[1], format!("{}-02", "a".repeat(249)));
    assert!(
        conversion
            .notes
            .iter()
            .any(|note| note.message.contains("253 characters")),
        "{:?}",
        conversion.notes
    );
}
