//! The API side of the reports ([`super`]): writing this replica's
//! ConfigMap, and watching the others'.

use std::collections::BTreeMap;
use std::time::Duration;

use aether_projection::ObjectKey;
use futures_util::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use super::{
    Answer, MAX_ANSWERS, Peers, REPORT_KEY, REPORT_LABEL, REPORT_LABEL_VALUE, Report, heartbeat, min_interval,
    report_name,
};
use aether_xds::fleet::Fleet;

/// The field manager of the reports' server-side applies.
const FIELD_MANAGER: &str = "aether-controller-report";

/// What a pass hands the writer: a report but for its time.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportBody {
    /// Envoys connected now.
    pub envoys: usize,
    /// The objects in flight, at most [`MAX_ANSWERS`].
    pub answers: BTreeMap<String, Answer>,
    /// Some were left out.
    pub truncated: bool,
}

impl ReportBody {
    /// `envoys`, and the first [`MAX_ANSWERS`] of `answers`.
    pub fn new(envoys: usize, answers: &BTreeMap<ObjectKey, Answer>) -> Self {
        Self {
            envoys,
            answers: answers
                .iter()
                .take(MAX_ANSWERS)
                .map(|(key, answer)| (key.to_string(), answer.clone()))
                .collect(),
            truncated: answers.len() > MAX_ANSWERS,
        }
    }
}

/// This replica's part in the reports: where a pass sends its own, and the
/// others' as watched.
pub struct Sharing {
    /// Where passes send this replica's report.
    pub sender: watch::Sender<Option<ReportBody>>,
    /// The others' reports.
    pub peers: Peers,
    /// The writer and the watch.
    pub tasks: [JoinHandle<()>; 2],
}

/// Starts writing `identity`'s report in `namespace`, of time to live
/// `ttl`, and watching the others' into peers that tell `fleet`.
pub fn share(client: &Client, namespace: &str, identity: String, ttl: Duration, fleet: Fleet) -> Sharing {
    let (sender, bodies) = watch::channel(None);
    let peers = Peers::default();
    let writer = spawn_writer(client.clone(), namespace, identity, ttl, bodies);
    let watch = spawn_watch(client.clone(), namespace, peers.clone(), fleet, heartbeat(ttl));
    Sharing {
        sender,
        peers,
        tasks: [writer, watch],
    }
}

/// Writes `identity`'s report in `namespace` from what `bodies` receives:
/// on a change at most every [`min_interval`], and every [`heartbeat`]
/// regardless, each to hold `ttl`. A failed write is logged and retried
/// at the next turn.
pub fn spawn_writer(
    client: Client,
    namespace: &str,
    identity: String,
    ttl: Duration,
    mut bodies: watch::Receiver<Option<ReportBody>>,
) -> JoinHandle<()> {
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    tokio::spawn(async move {
        let name = report_name(&identity);
        let params = PatchParams::apply(FIELD_MANAGER).force();
        loop {
            let body = bodies.borrow_and_update().clone();
            if let Some(body) = body {
                let report = Report {
                    replica: identity.clone(),
                    renew_time: Timestamp::now(),
                    ttl_seconds: ttl.as_secs(),
                    envoys: body.envoys,
                    answers: body.answers,
                    truncated: body.truncated,
                };
                match write(&api, &name, &report, &params).await {
                    Ok(()) => debug!(objects = report.answers.len(), "wrote the Programmed report"),
                    Err(error) => warn!(%error, "could not write the Programmed report; retrying"),
                }
            }
            tokio::time::sleep(min_interval(ttl)).await;
            // The next change, or the heartbeat.
            let _ = tokio::time::timeout(heartbeat(ttl) - min_interval(ttl), bodies.changed()).await;
            if bodies.has_changed().is_err() {
                return;
            }
        }
    })
}

async fn write(api: &Api<ConfigMap>, name: &str, report: &Report, params: &PatchParams) -> anyhow::Result<()> {
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(
                REPORT_LABEL.to_owned(),
                REPORT_LABEL_VALUE.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            REPORT_KEY.to_owned(),
            serde_json::to_string(report)?,
        )])),
        ..ConfigMap::default()
    };
    let mut value = serde_json::to_value(&config_map)?;
    value["apiVersion"] = "v1".into();
    value["kind"] = "ConfigMap".into();
    api.patch(name, params, &Patch::Apply(value)).await?;
    Ok(())
}

/// Watches the reports in `namespace` into `peers`; each change, and each
/// `every` while any is held (so that an expired one is seen), tells
/// `fleet`, whose changes make the objects in flight due.
pub fn spawn_watch(client: Client, namespace: &str, peers: Peers, fleet: Fleet, every: Duration) -> JoinHandle<()> {
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    let selector = format!("{REPORT_LABEL}={REPORT_LABEL_VALUE}");
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default().labels(&selector))
            .default_backoff()
            .boxed();
        let mut heartbeat = tokio::time::interval(every);
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(event)) => {
                        apply(&peers, event);
                        fleet.changed();
                    }
                    Some(Err(error)) => warn!(%error, "the Programmed reports' watch failed"),
                    None => return,
                },
                _ = heartbeat.tick() => {
                    if !peers.is_empty() {
                        fleet.changed();
                    }
                }
            }
        }
    })
}

fn apply(peers: &Peers, event: watcher::Event<ConfigMap>) {
    match event {
        watcher::Event::Apply(config_map) | watcher::Event::InitApply(config_map) => {
            let report = read(&config_map);
            peers.put(&config_map.name_any(), report);
        }
        watcher::Event::Delete(config_map) => peers.put(&config_map.name_any(), None),
        watcher::Event::Init | watcher::Event::InitDone => {}
    }
}

/// The report a ConfigMap holds; `None` (logged) when it holds none that
/// reads: a newer replica's report with fields this build does not know
/// still reads.
fn read(config_map: &ConfigMap) -> Option<Report> {
    let text = config_map.data.as_ref()?.get(REPORT_KEY)?;
    match serde_json::from_str(text) {
        Ok(report) => Some(report),
        Err(error) => {
            warn!(name = %config_map.name_any(), %error, "a Programmed report that does not read; ignored");
            None
        }
    }
}
