//! A stateful mock Kubernetes API server over plain HTTP on 127.0.0.1, for
//! tests whose clients are real: a `kube::Client` built from
//! [`KubeApi::kubeconfig`], or a controller process started with
//! `KUBECONFIG` set to [`KubeApi::kubeconfig_path`].
//!
//! It serves the kinds of [`Resource`] (get, list, watch, create, update,
//! merge and strategic merge patch, server-side apply, delete; the
//! VirtualHosts' `status` subresource; metadata-only lists and watches),
//! keeps `resourceVersion`, `uid`, `generation` and `creationTimestamp` as
//! the API server does, and refuses a conflicting apply with 409 as
//! leader election needs. Discovery (`/api`, `/apis`...) is served in its
//! legacy JSON form, enough for `kubectl` to find the kinds. Tests seed and change objects through the
//! handle ([`KubeApi::create`], [`KubeApi::replace`], [`KubeApi::delete`])
//! and read what clients did ([`KubeApi::requests`], [`KubeApi::request_log`],
//! [`KubeApi::get`]); they make it fail or stall ([`KubeApi::fail`],
//! [`KubeApi::delay`]).
//! No authentication, no admission, no garbage collection.

mod discovery;
mod faults;
mod fields;
mod resource;
mod routes;
mod select;
mod store;
mod watch;

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::service::service_fn;
use serde_json::Value;

use faults::Faults;
pub use resource::{ApiError, Resource};
use store::{Key, Source, Store, Target};

/// The field manager of the handle's own writes.
pub const TEST_MANAGER: &str = "aether-e2e";

/// The most requests [`KubeApi::request_log`] keeps (the newest).
const LOG_REQUESTS: usize = 10_000;
/// The most body bytes it keeps, over all its requests.
const LOG_BYTES: usize = 64 * 1024 * 1024;

/// One kind of request, as counted by [`KubeApi::requests`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKey {
    /// The Kubernetes verb: get, list, watch, create, update, patch, delete.
    pub verb: String,
    /// The plural (`virtualhosts`).
    pub resource: String,
    /// `status`, or none.
    pub subresource: Option<String>,
    /// The object's name; none for lists, watches and creates.
    pub name: Option<String>,
}

impl RequestKey {
    /// The key of `verb` on `resource` (`subresource`, `name` when given).
    pub fn new(verb: &str, resource: Resource, subresource: Option<&str>, name: Option<&str>) -> Self {
        Self {
            verb: verb.to_owned(),
            resource: resource.plural().to_owned(),
            subresource: subresource.map(str::to_owned),
            name: name.map(str::to_owned),
        }
    }
}

/// One request as it came, in [`KubeApi::request_log`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// Its kind.
    pub key: RequestKey,
    /// The namespace in its URL, if any.
    pub namespace: Option<String>,
    /// When it arrived.
    pub at: Instant,
    /// Its `Content-Type` (the patch type of a patch), empty if none.
    pub content_type: String,
    /// Its body as sent.
    pub body: Vec<u8>,
}

impl LoggedRequest {
    /// The body as JSON (`Null` when empty or not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// The newest requests, bounded in count and body bytes.
#[derive(Default)]
struct RequestLog {
    requests: VecDeque<LoggedRequest>,
    bytes: usize,
}

impl RequestLog {
    fn push(&mut self, request: LoggedRequest) {
        self.bytes += request.body.len();
        self.requests.push_back(request);
        while self.requests.len() > LOG_REQUESTS || self.bytes > LOG_BYTES {
            let Some(dropped) = self.requests.pop_front() else {
                break;
            };
            self.bytes -= dropped.body.len();
        }
    }
}

/// What the server's tasks share with the handle.
pub(crate) struct Shared {
    store: Mutex<Store>,
    /// The newest version, sent after each write: wakes the watches.
    changed: tokio::sync::watch::Sender<u64>,
    /// Bumped by [`KubeApi::close_watches`].
    closing: tokio::sync::watch::Sender<u64>,
    requests: Mutex<BTreeMap<RequestKey, u64>>,
    log: Mutex<RequestLog>,
    faults: Mutex<Faults>,
}

impl Shared {
    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs a write on the store, then wakes the watches.
    fn write<T>(&self, write: impl FnOnce(&mut Store) -> Result<T, ApiError>) -> Result<T, ApiError> {
        let (result, version) = {
            let mut store = self.store();
            let result = write(&mut store);
            (result, store.version())
        };
        self.changed.send_replace(version);
        result
    }

    fn count(&self, key: RequestKey) {
        let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
        *requests.entry(key).or_default() += 1;
    }

    fn log(&self, request: LoggedRequest) {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).push(request);
    }

    fn faults(&self) -> MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The mock API server, serving until dropped.
pub struct KubeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    kubeconfig: PathBuf,
    // Holds the kubeconfig file.
    _dir: tempfile::TempDir,
    // Taken on drop: shut down in the background, so that dropping the
    // handle inside an async test does not block its runtime.
    runtime: Option<tokio::runtime::Runtime>,
}

impl KubeApi {
    /// Starts the server on a free port of 127.0.0.1, on a runtime of its
    /// own (so a test that blocks does not stall it).
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kube-api-mock")
            .enable_all()
            .build()
            .expect("starting the mock API server's runtime");
        // Bound here, not on the runtime: `start` may be called inside
        // another runtime, where blocking on this one would panic.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding the mock API server");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let addr = listener.local_addr().expect("a bound address");
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::new()),
            changed: tokio::sync::watch::Sender::new(0),
            closing: tokio::sync::watch::Sender::new(0),
            requests: Mutex::default(),
            log: Mutex::default(),
            faults: Mutex::default(),
        });
        let served = shared.clone();
        let service = service_fn(move |request: hyper::Request<Incoming>| {
            let shared = served.clone();
            async move { Ok::<_, Infallible>(routes::handle(shared, request).await) }
        });
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            aether_http_server::Server::new(listener_config())
                .serve(listener, service, std::future::pending())
                .await;
        });
        let dir = tempfile::tempdir().expect("a directory for the kubeconfig");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_text(addr)).expect("writing the kubeconfig");
        Self {
            addr,
            shared,
            kubeconfig,
            _dir: dir,
            runtime: Some(runtime),
        }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig for the server (context `aether-mock`, namespace `default`, no credentials).
    pub fn kubeconfig(&self) -> String {
        kubeconfig_text(self.addr)
    }

    /// The same kubeconfig as a file, for `KUBECONFIG` (removed with the handle).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// Every request served so far, counted by kind.
    pub fn requests(&self) -> BTreeMap<RequestKey, u64> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The newest requests (up to 10,000 and 64 MiB of bodies), in the order they came.
    pub fn request_log(&self) -> Vec<LoggedRequest> {
        let log = self.shared.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.requests.iter().cloned().collect()
    }

    /// How many `verb` requests on `resource` were served, over every name and subresource.
    pub fn request_count(&self, verb: &str, resource: Resource) -> u64 {
        self.requests()
            .iter()
            .filter(|(key, _)| key.verb == verb && key.resource == resource.plural())
            .map(|(_, count)| count)
            .sum()
    }

    /// Creates `object` (kind from its `apiVersion` and `kind`, namespace
    /// from its metadata); unlike a client's, its `creationTimestamp`,
    /// `generation` and `status` are kept when given.
    pub fn create(&self, object: Value) -> Result<Value, ApiError> {
        let (resource, namespace, _) = address(&object)?;
        self.shared
            .write(|store| store.create(resource, &namespace, object, TEST_MANAGER, Source::Test))
    }

    /// Replaces the stored object of `object`'s kind, namespace and name,
    /// status included; a change outside `metadata` and `status` bumps `generation`.
    pub fn replace(&self, object: Value) -> Result<Value, ApiError> {
        let (resource, namespace, name) = address(&object)?;
        let key = Key::new(resource, &namespace, &name);
        self.shared
            .write(|store| store.update(&key, object, TEST_MANAGER, Target::Whole))
    }

    /// Deletes an object; returns it as it was.
    pub fn delete(&self, resource: Resource, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let key = Key::new(resource, namespace, name);
        self.shared.write(|store| store.delete(&key))
    }

    /// The stored object, if any.
    pub fn get(&self, resource: Resource, namespace: &str, name: &str) -> Option<Value> {
        self.shared
            .store()
            .get(&Key::new(resource, namespace, name))
            .ok()
            .cloned()
    }

    /// The objects of `resource` in `namespace` (all when `None`), by namespace and name.
    pub fn list(&self, resource: Resource, namespace: Option<&str>) -> Vec<Value> {
        let store = self.shared.store();
        let all = select::Selector::default();
        store
            .list(resource, namespace, &all)
            .map(|(_, object)| object.clone())
            .collect()
    }

    /// Every stored `events.k8s.io/v1` Event, by namespace and name.
    pub fn events(&self) -> Vec<Value> {
        self.list(Resource::Events, None)
    }

    /// The field managers owning any field of an object (a Lease's holders, say).
    pub fn managers(&self, resource: Resource, namespace: &str, name: &str) -> Vec<String> {
        self.shared.store().managers(&Key::new(resource, namespace, name))
    }

    /// The newest `resourceVersion`.
    pub fn resource_version(&self) -> u64 {
        self.shared.store().version()
    }

    /// Ends every open watch, as an API server restart or a dropped
    /// connection would; clients watch again from their last version.
    pub fn close_watches(&self) {
        self.shared.closing.send_modify(|epoch| *epoch += 1);
    }
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::ZERO);
        }
    }
}

/// The kind, namespace and name `object` says it is.
fn address(object: &Value) -> Result<(Resource, String, String), ApiError> {
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    let (api_version, kind) = (text(&object["apiVersion"]), text(&object["kind"]));
    let resource = Resource::of(&api_version, &kind)
        .ok_or_else(|| ApiError::bad_request(format!("no kind {kind} in {api_version} is served")))?;
    let namespace = text(&object["metadata"]["namespace"]);
    let name = text(&object["metadata"]["name"]);
    if namespace.is_empty() {
        return Err(ApiError::bad_request("metadata.namespace is required"));
    }
    Ok((resource, namespace, name))
}

fn kubeconfig_text(addr: SocketAddr) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: aether-mock
  cluster:
    server: http://{addr}
users:
- name: aether-mock
  user: {{}}
contexts:
- name: aether-mock
  context:
    cluster: aether-mock
    user: aether-mock
    namespace: default
current-context: aether-mock
"
    )
}

/// The listener's bounds: watches are long requests, and clients keep
/// their connections, so nothing is closed for idling during a test.
fn listener_config() -> aether_http_server::Config {
    aether_http_server::Config {
        name: "kube-api-mock",
        max_connections: 1024,
        handshake_timeout: Duration::from_secs(10),
        first_request_timeout: Duration::from_secs(60),
        header_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(3600),
        write_timeout: Duration::from_secs(60),
        shutdown_grace: Duration::from_secs(1),
        protocol: aether_http_server::Protocol::Http1 {
            max_header_bytes: 64 * 1024,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(bytes: usize) -> LoggedRequest {
        LoggedRequest {
            key: RequestKey::new("create", Resource::Events, None, None),
            namespace: Some("shop".to_owned()),
            at: Instant::now(),
            content_type: "application/json".to_owned(),
            body: vec![b' '; bytes],
        }
    }

    #[test]
    fn the_request_log_keeps_the_newest_within_its_count_and_bytes() {
        let mut log = RequestLog::default();
        for _ in 0..LOG_REQUESTS + 5 {
            log.push(logged(1));
        }
        assert_eq!((log.requests.len(), log.bytes), (LOG_REQUESTS, LOG_REQUESTS));
        log.push(logged(LOG_BYTES));
        // The big one alone fits; everything older goes.
        assert_eq!((log.requests.len(), log.bytes), (1, LOG_BYTES));
        log.push(logged(1));
        assert_eq!((log.requests.len(), log.bytes), (1, 1));
    }
}
