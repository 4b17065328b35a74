use super::*;

fn report(replica: &str, envoys: usize, answers: &[(&str, i64, Programmed)]) -> Report {
    Report {
        replica: replica.to_owned(),
        renew_time: Timestamp::now(),
        ttl_seconds: 30,
        envoys,
        answers: answers
            .iter()
            .map(|(key, generation, programmed)| {
                let answer = Answer {
                    generation: *generation,
                    programmed: programmed.clone(),
                };
                ((*key).to_owned(), answer)
            })
            .collect(),
        truncated: false,
    }
}

const PROGRAMMED_1: Programmed = Programmed::Programmed {
    envoys: 1,
    left_out: Vec::new(),
};

#[test]
fn the_envoys_of_every_replica_add_up() {
    let peer = report(
        "edge-1",
        2,
        &[(
            "shop/a",
            3,
            Programmed::Programmed {
                envoys: 2,
                left_out: vec![],
            },
        )],
    );
    assert_eq!(
        combine(PROGRAMMED_1, "shop/a", 3, &[&peer]),
        Programmed::Programmed {
            envoys: 3,
            left_out: vec![]
        }
    );
    // The holder has none: the peer's speak.
    assert_eq!(
        combine(Programmed::NoEnvoy, "shop/a", 3, &[&peer]),
        Programmed::Programmed {
            envoys: 2,
            left_out: vec![]
        }
    );
    // A peer without Envoys says nothing.
    let idle = report("edge-2", 0, &[]);
    assert_eq!(combine(Programmed::NoEnvoy, "shop/a", 3, &[&idle]), Programmed::NoEnvoy);
}

#[test]
fn a_peer_that_has_not_answered_this_generation_is_waited_for() {
    let behind = report("edge-1", 1, &[("shop/a", 2, PROGRAMMED_1)]);
    let silent = report("edge-2", 2, &[]);
    assert_eq!(
        combine(PROGRAMMED_1, "shop/a", 3, &[&behind, &silent]),
        Programmed::Pending {
            named: vec!["replica edge-1".into(), "replica edge-2".into()],
            waiting: 3,
            envoys: 4,
            left_out: vec![],
        }
    );
    let pending = report(
        "edge-1",
        2,
        &[(
            "shop/a",
            3,
            Programmed::Pending {
                named: vec!["envoy-7".into()],
                waiting: 1,
                envoys: 2,
                left_out: vec![],
            },
        )],
    );
    assert_eq!(
        combine(PROGRAMMED_1, "shop/a", 3, &[&pending]),
        Programmed::Pending {
            named: vec!["envoy-7".into()],
            waiting: 1,
            envoys: 3,
            left_out: vec![],
        }
    );
}

#[test]
fn a_refusal_anywhere_is_the_answer() {
    let refused = Programmed::Rejected {
        envoy: "envoy-7".into(),
        resource: "RouteConfiguration aether-edge/shop/a".into(),
        error: "bad".into(),
    };
    let peer = report("edge-1", 1, &[("shop/a", 3, refused.clone())]);
    assert_eq!(combine(PROGRAMMED_1, "shop/a", 3, &[&peer]), refused);
    assert_eq!(combine(refused.clone(), "shop/a", 3, &[]), refused);
}

#[test]
fn reports_live_for_their_time_and_read_back() {
    let mut old = report("edge-1", 1, &[("shop/a", 3, PROGRAMMED_1)]);
    old.renew_time = Timestamp::now() - jiff::SignedDuration::from_secs(31);
    assert!(!old.live(Timestamp::now()));
    let peers = Peers::default();
    peers.put("aether-programmed-edge-1", Some(old));
    peers.put("aether-programmed-edge-0", Some(report("edge-0", 1, &[])));
    peers.put("aether-programmed-edge-2", Some(report("edge-2", 1, &[])));
    let live: Vec<String> = peers
        .live("edge-0", Timestamp::now())
        .into_iter()
        .map(|report| report.replica)
        .collect();
    assert_eq!(live, ["edge-2"], "not expired, not its own");
    peers.put("aether-programmed-edge-2", None);
    assert!(peers.live("edge-0", Timestamp::now()).is_empty());

    // As written and read: tagged by reason.
    let written = report("edge-1", 1, &[("shop/a", 3, PROGRAMMED_1)]);
    let text = serde_json::to_string(&written).unwrap();
    assert!(
        text.contains(r#""shop/a":{"generation":3,"programmed":{"reason":"Programmed","envoys":1}}"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<Report>(&text).unwrap(), written);
}

#[test]
fn the_envoys_each_replica_left_out_are_named_together() {
    let peer = report(
        "edge-1",
        2,
        &[(
            "shop/a",
            3,
            Programmed::Programmed {
                envoys: 1,
                left_out: vec!["envoy-9 (not answering)".into()],
            },
        )],
    );
    let own = Programmed::Programmed {
        envoys: 1,
        left_out: vec!["envoy-2 (refused it)".into()],
    };
    assert_eq!(
        combine(own, "shop/a", 3, &[&peer]),
        Programmed::Programmed {
            envoys: 2,
            left_out: vec!["envoy-2 (refused it)".into(), "envoy-9 (not answering)".into()]
        }
    );
}
