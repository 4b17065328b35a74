//! `aether-controller`: see the crate README.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use aether_controller::cluster::{self, ClusterState, Scope};
use aether_controller::debounce::{DEFAULT_MAX_DELAY, DEFAULT_QUIET, Debouncer};
use aether_controller::events::EventRecorder;
use aether_controller::leader;
use aether_controller::local::{Local, Options};
use aether_controller::metrics::{self, Metrics};
use aether_controller::programmed::replicas;
use aether_controller::tls::TlsSettings;
use aether_controller::tls::cluster::ClusterSecrets;
use aether_controller::xds;
use aether_manifests::Limits;
use aether_projection::{PlainHttp, ProjectionConfig};
use aether_runtime::logs::LogFormat;
use aether_xds::transport::{self, Transport, TransportError};
use anyhow::Context;
use clap::Parser;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

#[cfg(feature = "test-hooks")]
mod test_refusals;

/// Keeps the edge's Envoy route configuration and every VirtualHost's status
/// in step with the VirtualHost objects.
///
/// With --manifests, runs over local manifest files (local mode); without,
/// watches the cluster of the current kubeconfig or service account.
#[derive(Debug, Parser)]
#[command(name = "aether-controller", version)]
struct Cli {
    /// Where routes.json, dependencies.json and tls-secrets.json are written
    /// (and status.json in local mode). Must exist.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Local mode: read VirtualHost manifests from this directory (or file)
    /// instead of a cluster.
    #[arg(long, value_name = "DIR")]
    manifests: Option<PathBuf>,
    /// Local mode: reconcile once and exit (exit code 1 when some input
    /// could not be read; objects left out, invalid or unsupported, are
    /// outcomes, reported in the status, and exit 0).
    #[arg(long, requires = "manifests")]
    once: bool,
    /// Local mode: how often the manifests are checked for changes, in ms.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    poll_ms: u64,
    /// Local mode: a manifest modified less than this long ago, in ms, may
    /// still be being written, and is read once left alone this long (0:
    /// read at once, for writers that move whole files into place).
    #[arg(long, value_name = "MS", default_value_t = Limits::default().settle.as_millis() as u64)]
    settle_ms: u64,
    /// Cluster mode: watch only these namespaces (repeatable); default all.
    #[arg(long = "namespace", value_name = "NS", conflicts_with = "manifests")]
    namespaces: Vec<String>,
    /// Also serve the edge's configuration over gRPC (xDS: routes,
    /// listener and secrets, delta or state of the world) on this address;
    /// over mutual TLS (--xds-tls-cert, --xds-tls-key, --xds-tls-client-ca),
    /// or --xds-plaintext. Each object's Programmed condition then says
    /// whether every Envoy connected applied it.
    #[arg(long, value_name = "ADDR", conflicts_with = "once")]
    xds_addr: Option<SocketAddr>,
    /// xDS over mutual TLS: the server's certificate chain (PEM), e.g. a
    /// mounted cert-manager Secret's tls.crt. Reloaded, with the key and
    /// the client CA, on the next connection after any of them changes; a
    /// set that does not load keeps the last good one serving.
    #[arg(long, value_name = "FILE", requires = "xds_addr")]
    xds_tls_cert: Option<PathBuf>,
    /// xDS over mutual TLS: the private key of --xds-tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "xds_addr")]
    xds_tls_key: Option<PathBuf>,
    /// xDS over mutual TLS: the CA certificates (PEM) a client's (Envoy's)
    /// certificate must chain to; a client without one is refused.
    #[arg(long, value_name = "FILE", requires = "xds_addr")]
    xds_tls_client_ca: Option<PathBuf>,
    /// Serve xDS unencrypted and unauthenticated (HTTP/2 with prior
    /// knowledge), e.g. to an Envoy on loopback; without it, xDS needs the
    /// three --xds-tls-* files.
    #[arg(long, requires = "xds_addr")]
    xds_plaintext: bool,
    /// xDS connections served at once (lowered, with a warning, when the
    /// file descriptor limit leaves less room). At the bound a new
    /// connection is served and the one idle the longest (without a
    /// stream) is closed.
    #[arg(long, value_name = "N", default_value_t = aether_xds::MAX_CONNECTIONS)]
    xds_max_connections: usize,
    /// Envoys take everything over xDS: routes.json, listeners.json and the
    /// SDS files of secrets/ are not written (nor the route configuration
    /// rendered as JSON, 190 MB at 50,000 objects on every change of
    /// routes; nor private keys written to disk). dependencies.json,
    /// tls-secrets.json and local mode's status.json still are.
    #[arg(long, requires = "xds_addr")]
    xds_only: bool,
    /// How long, in seconds, an Envoy that disconnected is still waited
    /// for by Programmed (known by its node id: give each its own), so an
    /// edit made while it restarts is Pending rather than Programmed by the
    /// Envoys left. 0: forgotten at once.
    #[arg(long, value_name = "SECS", default_value_t = aether_xds::fleet::DEFAULT_ABSENCE_GRACE.as_secs(), requires = "xds_addr")]
    envoy_absence_grace_secs: u64,
    /// How long, in seconds, an Envoy may leave an update unanswered (not
    /// acknowledged, not read, a type not asked for) before Programmed
    /// stops waiting for it: it is then left out of what is applied,
    /// named `(not answering)`, until it answers. An Envoy alone is waited
    /// for still. At least 1.
    #[arg(long, value_name = "SECS", default_value_t = aether_xds::fleet::DEFAULT_ANSWER_DEADLINE.as_secs(), value_parser = clap::value_parser!(u64).range(1..), requires = "xds_addr")]
    envoy_answer_deadline_secs: u64,
    /// Cluster mode with xDS: the time to live, in seconds, of the report
    /// through which this replica tells the Lease holder what its Envoys
    /// applied (a ConfigMap renewed every third of it); a replica gone
    /// holds objects Pending this long at most.
    #[arg(long, value_name = "SECS", default_value_t = replicas::DEFAULT_TTL.as_secs(), requires = "xds_addr")]
    programmed_report_ttl_secs: u64,
    /// Local mode: the TLS secrets the objects name (`KUBERNETES`), laid
    /// out as mounted Secrets: DIR/NAMESPACE/NAME/tls.crt and tls.key.
    /// Read when referenced, checked, and handed to Envoy by SDS; a change
    /// of their files is served without a restart.
    #[arg(long, value_name = "DIR", requires = "manifests")]
    secrets: Option<PathBuf>,
    /// Where Envoy's HTTPS listener (from listeners.json or LDS) binds.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8443")]
    https_addr: SocketAddr,
    /// The output directory as Envoy sees it, for the paths in
    /// listeners.json; default --out (mount it at the same path).
    #[arg(long, value_name = "DIR")]
    envoy_dir: Option<PathBuf>,
    /// Ignored: the HTTPS listener served over xDS takes its routes and
    /// secrets from Envoy's aggregated stream (its bootstrap's ads_config).
    /// Accepted so that Deployments that still pass it start.
    #[arg(long, value_name = "NAME", hide = true)]
    xds_cluster: Option<String>,
    /// Test builds only: spoil this object's chain configuration
    /// (`NAMESPACE/NAME`) so that Envoy refuses it.
    #[cfg(feature = "test-hooks")]
    #[arg(long, value_name = "NAMESPACE/NAME", hide = true)]
    test_refused_chain: Option<String>,
    /// Test builds only: spoil every chain configuration whose encoding
    /// holds this text (a route's path, say), from the edit that adds it.
    #[cfg(feature = "test-hooks")]
    #[arg(long, value_name = "TEXT", hide = true)]
    test_refused_marker: Option<String>,
    /// What a host of an object with `tls` answers over plain HTTP: routed
    /// as over TLS (`serve`), or redirected to HTTPS (`redirect`, 301): then
    /// an edit of its routes is one small configuration for Envoy, not the
    /// plain listener's configuration of every host (at scale, use it).
    #[arg(long, value_enum, value_name = "HOW", default_value_t = PlainHttpArg::Serve)]
    tls_hosts_over_plain_http: PlainHttpArg,
    /// Envoy's cluster for the mesh's SDS, which serves the
    /// AWS_SECRETS_MANAGER certificates by name; without it, those chains
    /// are left out (ResolvedRefs=False).
    #[arg(long, value_name = "NAME")]
    mesh_sds_cluster: Option<String>,
    /// Cluster mode: serve Prometheus metrics at /metrics, and /readyz
    /// (200 once a pass has written the edge's files), on this address.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:9090")]
    metrics_addr: SocketAddr,
    /// Reconcile once no change has come for this long, in ms.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_QUIET.as_millis() as u64)]
    debounce_ms: u64,
    /// ... but at most this long after the first change of a burst, in ms.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_MAX_DELAY.as_millis() as u64)]
    max_delay_ms: u64,
    /// Cluster mode: the Lease whose holder writes statuses (every replica
    /// writes its own files).
    #[arg(long, value_name = "NAME", default_value = cluster::DEFAULT_LEASE_NAME)]
    lease_name: String,
    /// Cluster mode: the Lease's namespace; default the client's (in a pod,
    /// its own).
    #[arg(long, value_name = "NS")]
    lease_namespace: Option<String>,
    /// Cluster mode: this replica's name in the Lease and in its Events'
    /// reportingInstance (in a pod, set POD_NAME from metadata.name);
    /// default random in the Lease, the host's name in Events.
    #[arg(long, value_name = "ID", env = "POD_NAME")]
    identity: Option<String>,
    /// Cluster mode: no Lease; this replica always writes statuses (run only
    /// one).
    #[arg(long, conflicts_with = "manifests")]
    no_leader_election: bool,
    /// How log lines are written to standard error: text, or one JSON
    /// object per line (level, fields with the message, target, timestamp).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    #[cfg(feature = "test-hooks")]
    test_refusals::install(cli.test_refused_chain.as_deref(), cli.test_refused_marker.as_deref());
    if let Err(err) = aether_runtime::logs::init(cli.log_format) {
        eprintln!("aether-controller: setting up the logs: {err}");
        return ExitCode::from(2);
    }
    // Refused before anything runs: xDS is served over mutual TLS unless
    // plaintext is asked for by name.
    let xds_transport = match cli.xds_addr {
        None => None,
        Some(_) => match xds_transport(&cli) {
            Ok(transport) => Some(transport),
            Err(err) => {
                error!(error = %err, "exiting");
                return ExitCode::from(2);
            }
        },
    };
    if let Some(cluster) = &cli.xds_cluster {
        warn!(%cluster, "--xds-cluster is ignored: the listener served over xDS takes its routes and secrets \
            from Envoy's aggregated stream (the bootstrap's ads_config names the cluster); drop the flag");
    }
    aether_http_server::raise_fd_limit();
    let result = match cli.manifests.clone() {
        Some(manifests) => run_local(&cli, manifests, xds_transport),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")
            .and_then(|runtime| {
                runtime
                    .block_on(run_cluster(&cli, xds_transport))
                    .map(|()| ExitCode::SUCCESS)
            }),
    };
    result.unwrap_or_else(|err| {
        error!(error = %format!("{err:#}"), "exiting");
        ExitCode::from(2)
    })
}

/// The xDS server's transport, from the flags.
fn xds_transport(cli: &Cli) -> Result<Transport, TransportError> {
    transport::transport(
        cli.xds_tls_cert.clone(),
        cli.xds_tls_key.clone(),
        cli.xds_tls_client_ca.clone(),
        cli.xds_plaintext,
    )
}

/// How the HTTPS listener is handed to Envoy, from the flags.
fn tls_settings(cli: &Cli) -> anyhow::Result<TlsSettings> {
    let envoy_dir = match &cli.envoy_dir {
        Some(dir) => dir.clone(),
        // Envoy resolves a relative path against its own directory.
        None => std::path::absolute(&cli.out).context("the output directory's absolute path")?,
    };
    let envoy_dir = envoy_dir
        .to_str()
        .context("the output directory's path is not UTF-8")?
        .to_owned();
    Ok(TlsSettings {
        https_address: cli.https_addr.ip().to_string(),
        https_port: cli.https_addr.port(),
        mesh_sds_cluster: cli.mesh_sds_cluster.clone(),
        ..TlsSettings::new(envoy_dir)
    })
}

/// `--tls-hosts-over-plain-http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PlainHttpArg {
    Serve,
    Redirect,
}

/// The projection's settings from the command line.
fn projection_config(cli: &Cli) -> ProjectionConfig {
    ProjectionConfig {
        tls_hosts_over_plain_http: match cli.tls_hosts_over_plain_http {
            PlainHttpArg::Serve => PlainHttp::Serve,
            PlainHttpArg::Redirect => PlainHttp::Redirect,
        },
        ..ProjectionConfig::default()
    }
}

fn run_local(cli: &Cli, manifests: PathBuf, xds_transport: Option<Transport>) -> anyhow::Result<ExitCode> {
    let projection = projection_config(cli);
    let mut local = Local::new(Options {
        manifests,
        out: cli.out.clone(),
        poll: Duration::from_millis(cli.poll_ms),
        quiet: Duration::from_millis(cli.debounce_ms),
        max_delay: Duration::from_millis(cli.max_delay_ms),
        once: cli.once,
        projection: projection.clone(),
        secrets: cli.secrets.clone(),
        tls: tls_settings(cli)?,
    })?
    .with_limits(Limits {
        settle: Duration::from_millis(cli.settle_ms),
        reading: aether_manifests::Reading::Tolerant,
        ..Limits::default()
    });
    // Local mode runs on this thread; an xDS server on a runtime of its own,
    // whose worker serves it until the runtime is dropped on return.
    let mut _xds_runtime = None;
    if let (Some(addr), Some(transport)) = (cli.xds_addr, xds_transport) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("starting the xDS server's runtime")?;
        // Local mode stops with the process: the token is never cancelled.
        let never = CancellationToken::new();
        let (publisher, _server) = runtime.block_on(start_xds(
            cli,
            addr,
            transport,
            RESERVED_DESCRIPTORS,
            &projection,
            local.metrics.clone(),
            never,
        ))?;
        local = local.with_xds(publisher);
        if cli.xds_only {
            local = local.without_envoy_files();
        }
        _xds_runtime = Some(runtime);
    }
    let summary = local.run()?;
    Ok(if summary.input_errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

async fn run_cluster(cli: &Cli, xds_transport: Option<Transport>) -> anyhow::Result<()> {
    anyhow::ensure!(
        cli.out.is_dir(),
        "the output directory {} does not exist",
        cli.out.display()
    );
    let client = Client::try_default().await.context("connecting to the cluster")?;
    let metrics = Arc::new(Metrics::new());
    let listener = aether_http_server::bind(cli.metrics_addr)
        .await
        .with_context(|| format!("binding the metrics address {}", cli.metrics_addr))?;
    info!(addr = %cli.metrics_addr, "serving /metrics and /readyz");
    let bound = aether_http_server::fit_to_fd_limit("metrics", metrics::MAX_CONNECTIONS, RESERVED_DESCRIPTORS);
    // Cancelled once the loop is done: the servers close.
    let stopping = CancellationToken::new();
    let metrics_server = Server::spawn(metrics::serve(
        listener,
        metrics::listener_config(bound),
        metrics.clone(),
        stopping.clone().cancelled_owned(),
    ));

    let scopes: Vec<Scope> = if cli.namespaces.is_empty() {
        vec![None]
    } else {
        cli.namespaces.iter().cloned().map(Some).collect()
    };
    let events = cluster::watch(&client, &scopes);
    // The metadata of TLS Secrets in the same scopes: which exist, at which
    // version; the referenced ones are read with a GET (src/tls/cluster.rs).
    let secret_streams = scopes.iter().map(|scope| {
        let api: Api<PartialObjectMeta<Secret>> = match scope {
            None => Api::all(client.clone()),
            Some(namespace) => Api::namespaced(client.clone(), namespace),
        };
        watcher(api, watcher::Config::default().fields("type=kubernetes.io/tls"))
            .default_backoff()
            .boxed()
    });
    let secret_events = futures_util::stream::select_all(secret_streams);
    let projection = projection_config(cli);
    // Condition transitions become Events on the objects (sent by the
    // status writer only, from a task of their own).
    let (recorder, events_task) = EventRecorder::spawn(client.clone(), cli.identity.clone(), &metrics);
    let mut state = ClusterState::new(scopes, cli.out.clone(), projection.clone())
        .with_tls(tls_settings(cli)?, ClusterSecrets::watched())
        .with_events(recorder);
    let mut xds_server = None;
    let mut report_tasks = None;
    if let (Some(addr), Some(transport)) = (cli.xds_addr, xds_transport) {
        let reserved = RESERVED_DESCRIPTORS + metrics::MAX_CONNECTIONS;
        let (publisher, server) = start_xds(
            cli,
            addr,
            transport,
            reserved,
            &projection,
            metrics.clone(),
            stopping.clone(),
        )
        .await?;
        // What this replica's Envoys applied, shared with the others.
        let namespace = lease_namespace(cli, &client);
        let identity = cli
            .identity
            .clone()
            .unwrap_or_else(|| format!("pid-{}", std::process::id()));
        let ttl = Duration::from_secs(cli.programmed_report_ttl_secs.max(3));
        let sharing = replicas::reporter::share(&client, &namespace, identity.clone(), ttl, publisher.fleet().clone());
        state = state.with_xds(publisher).with_replicas(&sharing, identity);
        report_tasks = Some(sharing.tasks);
        if cli.xds_only {
            state = state.without_envoy_files();
        }
        xds_server = Some(server);
    }
    let debouncer = Debouncer::new(
        Duration::from_millis(cli.debounce_ms),
        Duration::from_millis(cli.max_delay_ms),
    );
    // SIGTERM is how Kubernetes stops a pod; Ctrl-C, a terminal.
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).context("listening for SIGTERM")?;
    let shutdown = async move {
        tokio::select! {
            _ = terminate.recv() => info!("terminated"),
            _ = tokio::signal::ctrl_c() => info!("interrupted"),
        }
    };
    let (leading, lease) = if cli.no_leader_election {
        info!("leader election off: this replica writes statuses");
        // Kept until the loop ends: it always leads.
        let (always, leading) = watch::channel(true);
        (leading, Err(always))
    } else {
        let namespace = lease_namespace(cli, &client);
        let (leading, task) = leader::join(client.clone(), &namespace, &cli.lease_name, cli.identity.clone()).await?;
        (leading, Ok(task))
    };
    let feeds = cluster::Feeds {
        virtual_hosts: events,
        secrets: secret_events,
        leading,
    };
    let result = cluster::run(&client, &mut state, feeds, &metrics, debouncer, shutdown).await;
    if let Ok(task) = lease {
        // `run` dropped the receiver: the task releases the Lease.
        leader::leave(task, Duration::from_secs(5)).await;
    }
    // The events already queued go out (briefly: the pod is stopping).
    drop(state);
    for task in report_tasks.into_iter().flatten() {
        task.abort();
    }
    if tokio::time::timeout(Duration::from_secs(2), events_task).await.is_err() {
        info!("stopping with events unsent");
    }
    // The servers close: xDS streams end with UNAVAILABLE (Envoy goes to
    // another replica), connections get GOAWAY or close when idle.
    stopping.cancel();
    for server in xds_server.into_iter().chain([metrics_server]) {
        server.stopped().await;
    }
    result
}

/// The Lease's namespace, where the reports go too.
fn lease_namespace(cli: &Cli, client: &kube::Client) -> String {
    cli.lease_namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_owned())
}

/// Descriptors kept for everything but connections: the API server
/// connections, the manifest files read, the files written, the runtime.
const RESERVED_DESCRIPTORS: usize = 256;

/// A server task, stopped by cancelling the token it was started with.
struct Server(tokio::task::JoinHandle<()>);

impl Server {
    fn spawn(server: impl std::future::Future<Output = ()> + Send + 'static) -> Self {
        Self(tokio::spawn(server))
    }

    /// Waits for the server to close (its own grace period bounds it).
    async fn stopped(self) {
        if let Err(err) = self.0.await {
            error!(error = %err, "a server task failed");
        }
    }
}

/// Binds `addr` and serves the edge's configuration over xDS there (over
/// `transport`), on the current runtime, to at most `--xds-max-connections` (fitted to the
/// descriptor limit after `reserved`), until `stopping`; returns what each
/// pass publishes to, and the server.
async fn start_xds(
    cli: &Cli,
    addr: SocketAddr,
    transport: Transport,
    reserved: usize,
    projection: &ProjectionConfig,
    metrics: Arc<Metrics>,
    stopping: CancellationToken,
) -> anyhow::Result<(xds::Publisher, Server)> {
    // Loaded before binding: files that do not load are a start-up error.
    let tls = match transport {
        Transport::MutualTls(files) => {
            let tls = transport::reloading(files, metrics.xds_tls_reloads.clone())
                .context("loading the xDS server's TLS files")?;
            info!(cert = %tls.files().cert.display(), "xDS over mutual TLS: clients must present a certificate");
            Some(tls)
        }
        Transport::Plaintext => {
            warn!("xDS in plaintext (--xds-plaintext): unencrypted, and any client that reaches the port is served");
            None
        }
    };
    let listener = aether_http_server::bind(addr)
        .await
        .with_context(|| format!("binding the xDS address {addr}"))?;
    info!(%addr, "serving the edge's configuration over xDS (RDS, LDS, SDS)");
    let bound = aether_http_server::fit_to_fd_limit("xds", cli.xds_max_connections, reserved);
    let listener_metrics = metrics.xds_listener.clone();
    let fleet = aether_xds::fleet::Fleet::with_answer_deadline(
        Duration::from_secs(cli.envoy_absence_grace_secs),
        Duration::from_secs(cli.envoy_answer_deadline_secs),
    );
    let (publisher, mut service) = xds::channel_with(&projection.route_configuration_name, metrics, fleet);
    if let Some(tls) = tls {
        service = service.with_tls(Arc::new(tls));
    }
    let server = Server::spawn(service.serve_with(
        listener,
        aether_xds::listener_config(bound),
        listener_metrics,
        stopping.cancelled_owned(),
    ));
    Ok((publisher, server))
}
