//! What the controller's log says of the pass that served a change: when
//! it ended, how long it took, and over gRPC how far into it the snapshot
//! was published.

use std::time::{Duration, Instant, SystemTime};

use aether_e2e::{Edge, Mode};

use crate::ms;

/// The pass that served a change, from its log line.
pub struct PassLine {
    pub duration: f64,
    /// Over gRPC: how far into the pass the snapshot was published.
    pub published: Option<f64>,
    /// From the pass's end until Envoy served the change.
    pub after_pass: f64,
}

/// The controller's pass that served the change after `since`: over files
/// the one that wrote a file Envoy reads, over gRPC (`--xds-only`: no
/// routes.json) the first that published. When it ended, how long it took
/// and how far into it the snapshot was published over xDS, from its log
/// line.
fn pass_after(log: &str, since: SystemTime, mode: Mode) -> Option<(SystemTime, f64, Option<f64>)> {
    // Over files, an HTTPS host's change may write its chain's file, the
    // listeners or a secret alone.
    let served_by: &[&str] = match mode {
        Mode::Files => &["\"routes.json\"", "\"chains/\"", "\"listeners.json\"", "\"secrets/\""],
        Mode::Xds => &["published_ms="],
    };
    log.lines()
        .filter(|line| line.contains(" reconciled ") && served_by.iter().any(|mark| line.contains(mark)))
        .filter_map(|line| {
            let ended: jiff::Timestamp = line.split_whitespace().next()?.parse().ok()?;
            let ended = SystemTime::from(ended);
            let duration = line
                .split("duration_ms=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            let published = line
                .split("published_ms=")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok());
            Some((ended, duration, published))
        })
        .find(|(ended, _, _)| *ended > since)
}

/// [`pass_after`] in the controller's log, waited for (Envoy may serve
/// the change before the pass that published it has ended and logged), at
/// most 10 s.
pub fn pass_line(edge: &Edge, since: SystemTime, served_at: SystemTime) -> Option<PassLine> {
    let clock = Instant::now();
    loop {
        if let Some((ended, duration, published)) = pass_after(&edge.controller_log(), since, edge.mode) {
            return Some(PassLine {
                duration,
                published,
                after_pass: ms(served_at.duration_since(ended).unwrap_or_default()),
            });
        }
        if clock.elapsed() > Duration::from_secs(10) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
