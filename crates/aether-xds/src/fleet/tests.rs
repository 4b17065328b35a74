use std::sync::Mutex;

use super::*;

const ROUTES: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
const LISTENERS: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

fn need(type_url: &'static str, name: &str, seq: u64) -> Need {
    Need {
        type_url,
        name: name.to_owned(),
        seq,
    }
}

#[test]
fn a_publication_is_held_once_the_response_completing_it_is_answered() {
    let mut acks = Acks::default();
    let a = need(ROUTES, "a", 3);
    assert_eq!(acks.holds(true, &a), Holds::NotYet);
    // Publication 3 goes out in two responses; the second completes it.
    acks.sent(1);
    acks.sent(2);
    acks.synced(3);
    acks.acked(1, &["a".into()]);
    assert_eq!(acks.holds(true, &a), Holds::NotYet, "its second response is unanswered");
    acks.acked(2, &["b".into()]);
    assert_eq!(acks.holds(true, &a), Holds::Yes);
    // A resource the stream does not ask for is not held.
    assert_eq!(acks.holds(false, &a), Holds::NotYet);
    // A publication with nothing new for the stream, all answered: held at once.
    acks.synced(5);
    assert_eq!(acks.holds(true, &need(ROUTES, "a", 5)), Holds::Yes);
    // With a response unanswered, only once it is.
    acks.sent(3);
    acks.synced(6);
    acks.synced(7);
    assert_eq!(acks.holds(true, &need(ROUTES, "a", 7)), Holds::NotYet);
    acks.acked(3, &[]);
    assert_eq!(acks.holds(true, &need(ROUTES, "a", 7)), Holds::Yes);
}

#[test]
fn a_refusal_names_its_resource_until_it_is_taken_again() {
    let mut acks = Acks::default();
    acks.sent(1);
    acks.synced(2);
    // Several refused together are sent again one at a time: nothing held yet.
    acks.refused(1, &["a".into(), "b".into()], "bad", true);
    assert_eq!(acks.holds(true, &need(ROUTES, "b", 2)), Holds::NotYet);
    acks.sent(2);
    acks.sent(3);
    acks.refused(2, &["a".into()], "bad regex in a", false);
    acks.acked(3, &["b".into()]);
    assert_eq!(
        acks.holds(true, &need(ROUTES, "a", 2)),
        Holds::Refused("bad regex in a".into())
    );
    assert_eq!(acks.holds(true, &need(ROUTES, "b", 2)), Holds::Yes);
    // a's next version, taken.
    acks.sent(4);
    acks.synced(9);
    acks.acked(4, &["a".into()]);
    assert_eq!(acks.holds(true, &need(ROUTES, "a", 9)), Holds::Yes);
}

#[test]
fn a_response_of_several_refused_whole_holds_none_of_it() {
    let mut acks = Acks::default();
    acks.sent(1);
    acks.synced(4);
    acks.refused(1, &["a".into(), "b".into()], "refused", false);
    assert_eq!(
        acks.holds(true, &need(ROUTES, "b", 4)),
        Holds::Refused("refused".into())
    );
    acks.sent(2);
    acks.synced(5);
    acks.acked(2, &["a".into(), "b".into()]);
    assert_eq!(acks.holds(true, &need(ROUTES, "b", 5)), Holds::Yes);
}

#[test]
fn an_envoy_that_never_answers_costs_a_bounded_memory() {
    let mut acks = Acks::default();
    for nonce in 1..10_000 {
        acks.sent(nonce);
        acks.synced(nonce);
    }
    assert!(acks.unanswered.len() <= MAX_UNANSWERED);
    acks.acked(9_999, &[]);
    assert_eq!(acks.holds(true, &need(ROUTES, "a", 9_999)), Holds::Yes);
}

/// A member answering from a table: (type, name) → holds.
struct Fake {
    node: &'static str,
    serves: Vec<&'static str>,
    answers: Mutex<Vec<(&'static str, Holds)>>,
}

impl Member for Fake {
    fn node(&self) -> Option<String> {
        Some(self.node.to_owned())
    }

    fn holds(&self, need: &Need) -> Holds {
        if !self.serves.contains(&need.type_url) {
            return Holds::NotServed;
        }
        let answers = self.answers.lock().unwrap();
        answers
            .iter()
            .find(|(name, _)| *name == need.name)
            .map_or(Holds::NotYet, |(_, holds)| holds.clone())
    }

    fn waiting_since(&self, _: &str) -> Option<Instant> {
        None
    }

    fn oldest_wait(&self) -> Option<Instant> {
        None
    }

    fn report(&self) -> Report {
        Report {
            node: Some(self.node.to_owned()),
            ..Report::default()
        }
    }
}

/// Every Envoy counted holds them, none left out.
fn all(envoys: usize) -> Applied {
    Applied::All {
        envoys,
        left_out: vec![],
    }
}

fn fake(node: &'static str, answers: Vec<(&'static str, Holds)>) -> Arc<Fake> {
    Arc::new(Fake {
        node,
        serves: vec![ROUTES, LISTENERS],
        answers: Mutex::new(answers),
    })
}

#[tokio::test]
async fn every_envoy_answers_for_an_object_and_one_gone_stays_expected() {
    let fleet = Fleet::new(Duration::from_secs(3600));
    let needs = [need(ROUTES, "a", 1), need(LISTENERS, "https", 1)];
    assert_eq!(fleet.applied(&needs), Applied::NoEnvoy);

    let one = fake("edge-1", vec![("a", Holds::Yes), ("https", Holds::Yes)]);
    let two = fake("edge-2", vec![("a", Holds::Yes)]);
    let changes = fleet.changes();
    let first = fleet.join(one.clone());
    let second = fleet.join(two.clone());
    assert!(changes.has_changed().unwrap());
    assert_eq!(
        fleet.applied(&needs),
        Applied::Pending {
            waiting: vec!["edge-2".into()],
            envoys: 2,
            left_out: vec![]
        }
    );
    two.answers.lock().unwrap().push(("https", Holds::Yes));
    assert_eq!(fleet.applied(&needs), all(2));

    // A stream serving none of the types asked is not counted.
    let sds = Arc::new(Fake {
        node: "edge-3",
        serves: vec!["secrets"],
        answers: Mutex::default(),
    });
    let _third = fleet.join(sds);
    assert_eq!(fleet.applied(&needs), all(2));

    // edge-2 goes: expected still, until it is back.
    drop(second);
    assert_eq!(
        fleet.applied(&needs),
        Applied::Pending {
            waiting: vec!["edge-2 (disconnected)".into()],
            envoys: 2,
            left_out: vec![]
        }
    );
    let _back = fleet.join(two.clone());
    assert_eq!(fleet.applied(&needs), all(2));

    // A refusal while another Envoy holds the resource: the refusing one
    // is left out, named.
    one.answers.lock().unwrap()[0].1 = Holds::Refused("duplicate domain".into());
    assert_eq!(
        fleet.applied(&needs),
        Applied::All {
            envoys: 1,
            left_out: vec!["edge-1 (refused it)".into()]
        }
    );
    // Refused by every Envoy that answered: a refusal, naming the first
    // Envoy, the resource and what Envoy said.
    two.answers.lock().unwrap()[0].1 = Holds::Refused("duplicate domain".into());
    assert_eq!(
        fleet.applied(&needs),
        Applied::Refused {
            envoy: "edge-1".into(),
            resource: "RouteConfiguration a".into(),
            error: "duplicate domain".into()
        }
    );
    drop(first);
}

#[tokio::test]
async fn without_a_grace_an_envoy_gone_is_forgotten() {
    let fleet = Fleet::new(Duration::ZERO);
    let needs = [need(ROUTES, "a", 1)];
    let member = fleet.join(fake("edge-1", vec![]));
    assert!(matches!(fleet.applied(&needs), Applied::Pending { .. }));
    drop(member);
    assert_eq!(fleet.applied(&needs), Applied::NoEnvoy);
}
