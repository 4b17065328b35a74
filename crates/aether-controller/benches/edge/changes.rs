//! The kinds of change the edge bench measures, made on a model of the
//! fleet's manifest files, and for each the answer that shows Envoy serves
//! it. Each kind's samples touch objects of their own part of the fleet:
//! the edited object in the middle, deletions in the first quarter, moved
//! hosts in the last, created objects after the last, the unrelated host
//! (whose held connections count the closures) at the start.

use std::collections::BTreeMap;

use aether_api::object::VirtualHostObject;
use aether_e2e::{Edge, http};
use aether_projection::cluster_name;
use aether_testing::fleet;
use aether_testing::pki::{Leaf, TestCa};

/// Objects per manifest file.
pub const PER_FILE: usize = 100;
/// Changes measured per kind, size and mode.
pub const SAMPLES: usize = 5;
/// The fewest objects the changes fit in (each kind's samples in its own part).
pub const MIN_OBJECTS: usize = 200;
/// The object whose host the held connections go to, which no change touches.
pub const UNRELATED: usize = 1;
/// The fleet's certificate's names: every host the changes make is under them.
pub const NAMES: [&str; 2] = ["*.example.com", "*.example.net"];

/// A kind of change to the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// One object's routes change (the edited object's).
    Edit,
    /// A host is added to the edited object.
    AddHost,
    /// A new object with a new host.
    Create,
    /// An object is deleted.
    Delete,
    /// A host moves between objects: its older claimant lets it go, so the
    /// conflict's winner changes.
    MoveHost,
    /// The edited object's certificate is replaced (the HTTPS fleet only).
    Rotate,
}

impl Change {
    /// Every kind, in the table's order.
    pub const ALL: [Self; 6] = [
        Self::Edit,
        Self::AddHost,
        Self::Create,
        Self::Delete,
        Self::MoveHost,
        Self::Rotate,
    ];

    /// Its name, as an argument and in the table's `change` column.
    pub fn name(self) -> &'static str {
        match self {
            Self::Edit => "edit",
            Self::AddHost => "add-host",
            Self::Create => "create",
            Self::Delete => "delete",
            Self::MoveHost => "move-host",
            Self::Rotate => "rotate",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// The object edited (and given hosts, and its certificate rotated).
pub fn edited(n: usize) -> usize {
    n / 2
}

/// The object deleted by sample `k`: none of its hosts is claimed by
/// another object (`i % 10 == 2`; see [`fleet::object`]).
fn deleted(n: usize, k: usize) -> usize {
    n / 4 / 10 * 10 + 2 + 10 * k
}

/// The object that gains its predecessor's host in sample `k` (it claims
/// it already, and loses it to the older predecessor: `i % 10 == 9`).
fn moved_to(n: usize, k: usize) -> usize {
    3 * n / 4 / 10 * 10 + 9 + 10 * k
}

/// The object created by sample `k`.
fn created(n: usize, k: usize) -> usize {
    n + k
}

/// The host sample `k` adds to the edited object.
fn added_host(k: usize) -> String {
    format!("added-{k}.example.com")
}

/// The first host of object `i`.
pub fn host(i: usize) -> String {
    format!("app-{i}.example.com")
}

/// The serial of the certificate sample `k` rotates in.
fn rotated_serial(k: usize) -> u64 {
    0x0c00 + k as u64
}

/// The cluster of route `r` of `object` (`/healthz` is route 0, `/api/vV/r1` route 1).
pub fn cluster_of_route(object: &VirtualHostObject, r: usize) -> String {
    let backend = object.spec.routes[r]
        .backend
        .as_ref()
        .expect("fleet routes have backends");
    cluster_name(&backend.service, backend.port)
}

/// Every object the changes read or make, as first written: their
/// clusters get backends.
pub fn involved(n: usize) -> Vec<VirtualHostObject> {
    let mut indices = vec![UNRELATED, edited(n), n - 1];
    for k in 0..SAMPLES {
        indices.extend([deleted(n, k), moved_to(n, k) - 1, moved_to(n, k), created(n, k)]);
    }
    indices.sort_unstable();
    indices.dedup();
    indices.into_iter().map(|i| fleet::object(i, 1)).collect()
}

/// What shows that Envoy serves a change.
#[derive(Debug, Clone)]
pub enum Served {
    /// `GET path` for `host` answers 200 from `cluster`.
    Routed {
        host: String,
        path: String,
        cluster: String,
    },
    /// `host` is served no more: 404 over plain HTTP; over TLS the
    /// handshake fails (the HTTPS listener's default chain closes the
    /// connection of an SNI no chain has) or a 404.
    Gone { host: String },
    /// A TLS handshake for `host` presents the certificate of `serial`.
    Certificate { host: String, serial: String },
}

/// Requests to the edge, over TLS for the HTTPS fleet.
pub struct Client<'a> {
    pub edge: &'a Edge,
    pub https: bool,
    pub ca: &'a [u8],
}

impl Client<'_> {
    /// `GET path` for `host`: the status and the backend's cluster (for a
    /// 200 from a backend); an error for a refused connection or handshake.
    pub fn get(&self, host: &str, path: &str) -> std::io::Result<(u16, Option<String>)> {
        let response = if self.https {
            self.edge.get_tls(host, host, path, self.ca)?
        } else {
            http::get(self.edge.envoy.listener(), host, path)?
        };
        let cluster = (response.status == 200)
            .then(|| serde_json::from_slice::<aether_e2e::Served>(&response.body).ok())
            .flatten()
            .map(|served| served.cluster);
        Ok((response.status, cluster))
    }

    /// Whether the edge serves `served`; for [`Served::Gone`], how.
    pub fn serves(&self, served: &Served) -> Option<String> {
        match served {
            Served::Routed { host, path, cluster } => {
                let (_, answered) = self.get(host, path).ok()?;
                (answered.as_ref() == Some(cluster)).then(|| format!("200 from {cluster}"))
            }
            Served::Gone { host } => match self.get(host, "/healthz") {
                Ok((404, _)) => Some("404".to_owned()),
                Ok(_) => None,
                Err(err) if self.https => Some(format!("TLS handshake failed ({err})")),
                Err(_) => None,
            },
            Served::Certificate { host, serial } => {
                (self.edge.serial(host, self.ca).ok().as_ref() == Some(serial)).then(|| format!("serial {serial}"))
            }
        }
    }
}

/// The fleet as its manifest files hold it: object `i` in file `i / PER_FILE`.
pub struct Manifests {
    objects: BTreeMap<usize, VirtualHostObject>,
}

impl Manifests {
    /// `n` objects, as [`fleet::objects`] makes them.
    pub fn new(n: usize) -> Self {
        Self {
            objects: fleet::objects(n).into_iter().enumerate().collect(),
        }
    }

    /// The manifest file of object `i`.
    pub fn file_of(i: usize) -> String {
        format!("objects-{:04}.yaml", i / PER_FILE)
    }

    /// Every file's name and text.
    pub fn files(&self) -> Vec<(String, String)> {
        let mut files: BTreeMap<String, Vec<VirtualHostObject>> = BTreeMap::new();
        for (i, object) in &self.objects {
            files.entry(Self::file_of(*i)).or_default().push(object.clone());
        }
        files
            .into_iter()
            .map(|(name, objects)| (name, fleet::manifest(objects)))
            .collect()
    }

    /// Every object's first host.
    pub fn first_hosts(&self) -> Vec<String> {
        self.objects
            .values()
            .map(|object| object.spec.hosts[0].clone())
            .collect()
    }

    /// Writes the file of object `i` into the edge's manifests, as the model has it.
    fn write(&self, edge: &Edge, i: usize) {
        let file = i / PER_FILE;
        let objects = self.objects.range(file * PER_FILE..(file + 1) * PER_FILE);
        edge.write(&Self::file_of(i), &fleet::manifest(objects.map(|(_, o)| o.clone())));
    }

    fn object(&mut self, i: usize) -> &mut VirtualHostObject {
        self.objects
            .get_mut(&i)
            .expect("the changes touch objects of the fleet")
    }

    /// Makes sample `k` of `kind` (`k` from 0) at `n` objects, with the
    /// certificates of `ca`, and says what shows Envoy serves it.
    pub fn apply(&mut self, kind: Change, k: usize, n: usize, edge: &Edge, ca: &TestCa) -> Served {
        match kind {
            Change::Edit => {
                let i = edited(n);
                let version = k as u32 + 2;
                let routes = fleet::object(i, version).spec.routes.clone();
                std::sync::Arc::make_mut(&mut self.object(i).spec).routes = routes;
                self.write(edge, i);
                Served::Routed {
                    host: host(i),
                    path: format!("/api/v{version}/r1"),
                    cluster: cluster_of_route(&self.objects[&i], 1),
                }
            }
            Change::AddHost => {
                let i = edited(n);
                std::sync::Arc::make_mut(&mut self.object(i).spec)
                    .hosts
                    .push(added_host(k));
                self.write(edge, i);
                Served::Routed {
                    host: added_host(k),
                    path: "/healthz".to_owned(),
                    cluster: cluster_of_route(&self.objects[&i], 0),
                }
            }
            Change::Create => {
                let i = created(n, k);
                let object = fleet::object(i, 1);
                let cluster = cluster_of_route(&object, 0);
                self.objects.insert(i, object);
                self.write(edge, i);
                Served::Routed {
                    host: host(i),
                    path: "/healthz".to_owned(),
                    cluster,
                }
            }
            Change::Delete => {
                let i = deleted(n, k);
                self.objects.remove(&i);
                self.write(edge, i);
                Served::Gone { host: host(i) }
            }
            Change::MoveHost => {
                let to = moved_to(n, k);
                let from = to - 1;
                let moving = host(from);
                std::sync::Arc::make_mut(&mut self.object(from).spec)
                    .hosts
                    .retain(|h| *h != moving);
                self.write(edge, from);
                Served::Routed {
                    host: moving,
                    path: "/healthz".to_owned(),
                    cluster: cluster_of_route(&self.objects[&to], 0),
                }
            }
            Change::Rotate => {
                let i = edited(n);
                let (namespace, name) = fleet::secret(i);
                let issued = ca.issue(&Leaf::new(&NAMES, rotated_serial(k)));
                edge.write_secret(&namespace, &name, &issued);
                Served::Certificate {
                    host: host(i),
                    serial: issued.serial,
                }
            }
        }
    }
}
