//! The edge bench's arguments: sizes, modes, fleets, kinds of change and
//! restarts, in any order.

use aether_e2e::Mode;

use crate::Fleet;
use crate::changes::{Change, MIN_OBJECTS};
use crate::restart::Restart;

/// What the arguments ask for.
pub struct Args {
    pub sizes: Vec<usize>,
    pub modes: Vec<Mode>,
    pub fleets: Vec<Fleet>,
    pub kinds: Vec<Change>,
    pub restarts: Vec<Restart>,
}

impl Args {
    /// Parses `args`; an error names an argument that is none of them.
    /// Nothing given of a sort means its default: 1,000 and 10,000
    /// objects, both modes, the plain fleet, and the edit alone unless a
    /// restart is asked for.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let (mut sizes, mut modes, mut fleets) = (Vec::new(), Vec::new(), Vec::new());
        let (mut kinds, mut restarts) = (Vec::new(), Vec::new());
        for arg in args {
            match arg.as_str() {
                "files" => modes.push(Mode::Files),
                "grpc" => modes.push(Mode::Xds),
                "http" => fleets.push(Fleet::Http),
                "https" => fleets.push(Fleet::Https),
                "all" => {
                    kinds.extend(Change::ALL);
                    restarts.extend(Restart::ALL);
                }
                // cargo bench's own.
                "--bench" => {}
                other => {
                    if let Some(kind) = Change::parse(other) {
                        kinds.push(kind);
                    } else if let Some(restart) = Restart::parse(other) {
                        restarts.push(restart);
                    } else if let Ok(n) = other.parse::<usize>() {
                        if n < MIN_OBJECTS {
                            return Err(format!(
                                "{n} objects: at least {MIN_OBJECTS} (each kind of change takes its objects from a part of the fleet)"
                            ));
                        }
                        sizes.push(n);
                    } else {
                        let kinds: Vec<&str> = Change::ALL.iter().map(|kind| kind.name()).collect();
                        let restarts: Vec<&str> = Restart::ALL.iter().map(|restart| restart.name()).collect();
                        return Err(format!(
                            "unknown argument {other:?}: expected a number of objects, files or grpc, http or https, all, a kind of change ({}) or a restart ({})",
                            kinds.join(", "),
                            restarts.join(", ")
                        ));
                    }
                }
            }
        }
        let default_kinds = if restarts.is_empty() {
            vec![Change::Edit]
        } else {
            Vec::new()
        };
        Ok(Self {
            sizes: once_each(sizes, vec![1_000, 10_000]),
            modes: once_each(modes, vec![Mode::Files, Mode::Xds]),
            fleets: once_each(fleets, vec![Fleet::Http]),
            kinds: once_each(kinds, default_kinds),
            restarts: once_each(restarts, Vec::new()),
        })
    }
}

/// `given` once each in its order, or `default` when nothing is given.
fn once_each<T: PartialEq>(given: Vec<T>, default: Vec<T>) -> Vec<T> {
    if given.is_empty() {
        return default;
    }
    let mut once = Vec::new();
    for item in given {
        if !once.contains(&item) {
            once.push(item);
        }
    }
    once
}
