//! `Programmed`: whether the edge's Envoys serve an object's current
//! generation (Gateway API's condition of that name, for a Gateway), so that
//! `kubectl wait --for=condition=Programmed` returns once a change is live.
//!
//! Here is how an answer reads; `tracker` gathers each pass's answers (the
//! fleet's, `aether_xds::fleet`, and the other `replicas`' reports).
//!
//! Its reasons, and what each message says, are [`ProgrammedReason`]'s in
//! the proto.
//!
//! With `Programmed` and `Pending`, the Envoys the fleet left out of the
//! count (one that refused what others took, one not answering within the
//! deadline: see `aether_xds::fleet`) are named after `; left out:`.
//!
//! `observedGeneration` is the generation the condition speaks of.

use std::fmt::Write as _;

use aether_api::config::v1::{ConditionType, ProgrammedReason};

use crate::text::truncate;

#[cfg(feature = "server")]
pub mod replicas;
#[cfg(feature = "server")]
pub(crate) mod tracker;

/// The condition type.
pub const PROGRAMMED: &str = ConditionType::Programmed.condition_name();
/// Reason: every Envoy serves this generation.
pub const REASON_PROGRAMMED: &str = ProgrammedReason::Programmed.condition_name();
/// Reason: some Envoy has not applied it yet.
pub const REASON_PENDING: &str = ProgrammedReason::Pending.condition_name();
/// Reason: an Envoy refused a resource holding it.
pub const REASON_REJECTED: &str = ProgrammedReason::Rejected.condition_name();
/// Reason: no Envoy is connected.
pub const REASON_NO_ENVOY: &str = ProgrammedReason::NoEnvoy.condition_name();
/// Reason: the edge does not serve this generation (Gateway API's reason
/// for a Gateway that cannot be programmed as written).
pub const REASON_INVALID: &str = ProgrammedReason::Invalid.condition_name();
/// Reason: what Envoy applied cannot be seen (it reads files).
pub const REASON_NOT_OBSERVED: &str = ProgrammedReason::NotObserved.condition_name();
/// How much of Envoy's own error a message carries.
pub const MAX_ENVOY_ERROR_CHARS: usize = 1024;
/// How many waiting Envoys a `Pending` message names.
pub const MAX_NAMED_ENVOYS: usize = 5;

/// What the fleet says of one object's generation (as a replica reports
/// it to the others: tagged by `reason`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason")]
pub enum Programmed {
    /// Every Envoy of the fleet applied it.
    Programmed {
        /// How many Envoys.
        envoys: usize,
        /// The first few Envoys left out of the count, by node and why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<String>,
    },
    /// Some Envoys have not applied it yet.
    Pending {
        /// The first few of them, by node.
        named: Vec<String>,
        /// How many.
        waiting: usize,
        /// Of how many Envoys.
        envoys: usize,
        /// The first few Envoys left out of the count, by node and why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<String>,
    },
    /// An Envoy refused a resource holding it.
    Rejected {
        /// The Envoy, by node.
        envoy: String,
        /// The resource: its type and name.
        resource: String,
        /// Envoy's `error_detail` message.
        error: String,
    },
    /// No Envoy is connected.
    NoEnvoy,
    /// Not observable, and why.
    #[serde(skip)]
    NotObserved(String),
}

/// `(status, reason, message)` of the condition for an object the edge
/// serves (`accepted`) or not.
pub fn condition(accepted: bool, programmed: &Programmed) -> (&'static str, &'static str, String) {
    if let Programmed::NotObserved(why) = programmed {
        return ("Unknown", REASON_NOT_OBSERVED, why.clone());
    }
    if !accepted {
        return (
            "False",
            REASON_INVALID,
            "the edge does not serve this generation: see Accepted".to_owned(),
        );
    }
    match programmed {
        Programmed::Programmed { envoys, left_out } => (
            "True",
            REASON_PROGRAMMED,
            format!("applied by {}{}", envoys_word(*envoys), left_out_words(left_out)),
        ),
        Programmed::Pending {
            named,
            waiting,
            envoys,
            left_out,
        } => {
            let mut message = format!("waiting for {waiting} of {} to apply it", envoys_word(*envoys));
            if !named.is_empty() {
                let _ = write!(message, ": {}", named.join(", "));
                if *waiting > named.len() {
                    let _ = write!(message, " and {} more", waiting - named.len());
                }
            }
            message.push_str(&left_out_words(left_out));
            ("False", REASON_PENDING, message)
        }
        Programmed::Rejected { envoy, resource, error } => (
            "False",
            REASON_REJECTED,
            format!("Envoy {envoy} refused {resource}: {}", sanitized(error)),
        ),
        Programmed::NoEnvoy => ("False", REASON_NO_ENVOY, "no Envoy is connected".to_owned()),
        Programmed::NotObserved(_) => unreachable!("answered above"),
    }
}

/// `; left out: edge-3 (not answering)`, or nothing.
fn left_out_words(left_out: &[String]) -> String {
    if left_out.is_empty() {
        return String::new();
    }
    format!("; left out: {}", left_out.join(", "))
}

fn envoys_word(n: usize) -> String {
    if n == 1 {
        "1 Envoy".to_owned()
    } else {
        format!("{n} Envoys")
    }
}

/// Envoy's error as a message carries it: control characters (a newline
/// in a log line or a terminal's escape) as spaces, at most
/// [`MAX_ENVOY_ERROR_CHARS`].
pub fn sanitized(error: &str) -> String {
    let plain: String = error.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    truncate(plain, MAX_ENVOY_ERROR_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_reads_as_its_row() {
        let cases = [
            (
                Programmed::Programmed {
                    envoys: 2,
                    left_out: vec![],
                },
                "True",
                REASON_PROGRAMMED,
                "applied by 2 Envoys",
            ),
            (
                Programmed::Programmed {
                    envoys: 2,
                    left_out: vec!["edge-c (not answering)".into(), "edge-d (refused it)".into()],
                },
                "True",
                REASON_PROGRAMMED,
                "applied by 2 Envoys; left out: edge-c (not answering), edge-d (refused it)",
            ),
            (
                Programmed::Pending {
                    named: vec!["edge-a".into(), "edge-b".into()],
                    waiting: 3,
                    envoys: 4,
                    left_out: vec![],
                },
                "False",
                REASON_PENDING,
                "waiting for 3 of 4 Envoys to apply it: edge-a, edge-b and 1 more",
            ),
            (
                Programmed::Pending {
                    named: vec!["edge-a".into()],
                    waiting: 1,
                    envoys: 1,
                    left_out: vec!["edge-c (not answering)".into()],
                },
                "False",
                REASON_PENDING,
                "waiting for 1 of 1 Envoy to apply it: edge-a; left out: edge-c (not answering)",
            ),
            (
                Programmed::Rejected {
                    envoy: "edge-a".into(),
                    resource: "RouteConfiguration aether-edge/default/b".into(),
                    error: "bad\nregex\u{1b}[31m".into(),
                },
                "False",
                REASON_REJECTED,
                "Envoy edge-a refused RouteConfiguration aether-edge/default/b: bad regex [31m",
            ),
            (Programmed::NoEnvoy, "False", REASON_NO_ENVOY, "no Envoy is connected"),
            (
                Programmed::NotObserved("Envoy reads files".into()),
                "Unknown",
                REASON_NOT_OBSERVED,
                "Envoy reads files",
            ),
        ];
        for (programmed, status, reason, message) in cases {
            assert_eq!(
                condition(true, &programmed),
                (status, reason, message.to_owned()),
                "{programmed:?}"
            );
        }
    }

    #[test]
    fn an_object_not_served_is_invalid_unless_nothing_is_observed() {
        let (status, reason, _) = condition(
            false,
            &Programmed::Programmed {
                envoys: 1,
                left_out: vec![],
            },
        );
        assert_eq!((status, reason), ("False", REASON_INVALID));
        let (status, reason, _) = condition(false, &Programmed::NotObserved("files".into()));
        assert_eq!((status, reason), ("Unknown", REASON_NOT_OBSERVED));
    }

    #[test]
    fn envoys_error_is_bounded() {
        let long = "x".repeat(10 * MAX_ENVOY_ERROR_CHARS);
        assert_eq!(sanitized(&long).chars().count(), MAX_ENVOY_ERROR_CHARS);
    }
}
