//! Cases for the status: its conditions and each of their fields.

use aether_api::config::v1::{Condition, VirtualHostStatus};

use super::{Case, Judged, condition, dns_name};

pub fn cases(cases: &mut Vec<Case>) {
    let mut status = |name: &str, conditions: Vec<Condition>, expected: &[(&str, &'static str)]| {
        cases.push(Case {
            name: format!("status: {name}"),
            message: Judged::Status(VirtualHostStatus {
                conditions,
                ..Default::default()
            }),
            expected: expected.iter().map(|(p, r)| (format!("status.{p}"), *r)).collect(),
        });
    };
    status("empty", vec![], &[]);
    status("one condition", vec![condition()], &[]);
    let of_types = |count: usize| -> Vec<Condition> {
        (0..count)
            .map(|i| Condition {
                r#type: format!("Type{i}"),
                ..condition()
            })
            .collect()
    };
    status("8 conditions", of_types(8), &[]);
    status("9 conditions", of_types(9), &[("conditions", "repeated.max_items")]);
    status(
        "two conditions of one type",
        vec![condition(), condition()],
        &[("conditions", "conditions.unique_type")],
    );
    status(
        "three conditions, two of one type",
        vec![condition(), of_types(1)[0].clone(), condition()],
        &[("conditions", "conditions.unique_type")],
    );
    status(
        "a condition with nothing set",
        vec![Condition::default()],
        &[
            ("conditions[0].type", "required"),
            ("conditions[0].status", "required"),
            ("conditions[0].lastTransitionTime", "required"),
            ("conditions[0].reason", "required"),
        ],
    );
    // A second condition, of another type, edited.
    let with = |edit: &dyn Fn(&mut Condition)| {
        let mut c = Condition {
            r#type: "Ready".into(),
            ..condition()
        };
        edit(&mut c);
        vec![condition(), c]
    };
    let type_316 = format!("{}/{}", dns_name(253), "A".repeat(62));
    let type_317 = format!("{}/{}", dns_name(253), "A".repeat(63));
    for (value, expected) in [
        ("example.com/Accepted", vec![]),
        ("Ready_2.b-c", vec![]),
        (type_316.as_str(), vec![]),
        (type_317.as_str(), vec!["string.max_len"]),
        ("-Accepted", vec!["string.pattern"]),
        ("Accepted-", vec!["string.pattern"]),
        ("Example.com/Accepted", vec!["string.pattern"]),
        ("/Accepted", vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| ("conditions[1].type", r)).collect();
        status(
            &format!("type {value:?}"),
            with(&|c| c.r#type = value.into()),
            &expected,
        );
    }
    for (value, ok) in [
        ("True", true),
        ("False", true),
        ("Unknown", true),
        ("true", false),
        ("Maybe", false),
    ] {
        let expected: &[(&str, &str)] = if ok {
            &[]
        } else {
            &[("conditions[1].status", "string.in")]
        };
        status(
            &format!("status {value:?}"),
            with(&|c| c.status = value.into()),
            expected,
        );
    }
    for (generation, ok) in [(0, true), (i64::MAX, true), (-1, false), (i64::MIN, false)] {
        let expected: &[(&str, &str)] = if ok {
            &[]
        } else {
            &[("conditions[1].observedGeneration", "int64.gte")]
        };
        status(
            &format!("observedGeneration {generation}"),
            with(&|c| c.observed_generation = generation),
            expected,
        );
    }
    for (value, ok) in [
        ("2026-11-29T19:01:31.123456789Z", true),
        ("2026-11-29T19:01:31.1234567890Z", false),
        ("2026-11-29T19:01:31+00:00", false),
        ("2026-11-29 19:01:31Z", false),
        ("2026-11-29T19:01:31.Z", false),
    ] {
        let expected: &[(&str, &str)] = if ok {
            &[]
        } else {
            &[("conditions[1].lastTransitionTime", "string.pattern")]
        };
        status(
            &format!("lastTransitionTime {value:?}"),
            with(&|c| c.last_transition_time = value.into()),
            expected,
        );
    }
    let time_65 = format!("2026-11-29T19:01:31.{}Z", "1".repeat(44));
    status(
        "a 65-character lastTransitionTime",
        with(&|c| c.last_transition_time = time_65.clone()),
        &[
            ("conditions[1].lastTransitionTime", "string.max_len"),
            ("conditions[1].lastTransitionTime", "string.pattern"),
        ],
    );
    let reason_1024 = format!("R{}", "a".repeat(1023));
    let reason_1025 = format!("R{}", "a".repeat(1024));
    for (value, expected) in [
        ("HostConflict", vec![]),
        ("A", vec![]),
        ("A_b,c:d_", vec![]),
        (reason_1024.as_str(), vec![]),
        (reason_1025.as_str(), vec!["string.max_len"]),
        ("1Invalid", vec!["string.pattern"]),
        ("Invalid:", vec!["string.pattern"]),
        ("Not valid", vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| ("conditions[1].reason", r)).collect();
        status(
            &format!("reason {value:?}"),
            with(&|c| c.reason = value.into()),
            &expected,
        );
    }
    status("an empty message", with(&|c| c.message.clear()), &[]);
    status(
        "a 32768-character message",
        with(&|c| c.message = "é".repeat(32768)),
        &[],
    );
    status(
        "a 32769-character message",
        with(&|c| c.message = "m".repeat(32769)),
        &[("conditions[1].message", "string.max_len")],
    );
}
