//! The mock API server against real clients: kube's `Client` over HTTP
//! (built from the server's kubeconfig), its runtime's watcher, the
//! controller's leader election and kube-lease-manager.

use std::time::Duration;

use aether_controller::{cluster, leader};
use aether_e2e::kube_api::{KubeApi, RequestKey, Resource};
use futures_util::{Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, PartialObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::DynamicObject;
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};

use crate::common::virtual_host;

/// A client of `api`, from the kubeconfig file it wrote (what `KUBECONFIG` names).
async fn client(api: &KubeApi) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(api.kubeconfig_path()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    assert_eq!(config.cluster_url.to_string(), format!("{}/", api.url()));
    kube::Client::try_from(config).unwrap()
}

fn dynamic(object: Value) -> DynamicObject {
    serde_json::from_value(object).unwrap()
}

fn names(objects: &[DynamicObject]) -> Vec<String> {
    let name = |o: &DynamicObject| {
        format!(
            "{}/{}",
            o.metadata.namespace.clone().unwrap(),
            o.metadata.name.clone().unwrap()
        )
    };
    objects.iter().map(name).collect()
}

fn version(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

fn generation(object: &DynamicObject) -> i64 {
    object.metadata.generation.unwrap()
}

/// The next event of a watch, within 10 s.
async fn next<T, S: Stream<Item = Result<Event<T>, watcher::Error>> + Unpin>(events: &mut S) -> Event<T> {
    tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("an event within 10 s")
        .expect("the watch goes on")
        .expect("no watch error")
}

/// No event within `wait`.
async fn quiet<T, S: Stream<Item = Result<Event<T>, watcher::Error>> + Unpin>(events: &mut S, wait: Duration) {
    if let Ok(event) = tokio::time::timeout(wait, events.next()).await {
        panic!("an unexpected watch event: {:?}", event.map(|e| e.map(|_| ())));
    }
}

fn api_error(result: Result<impl std::fmt::Debug, kube::Error>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn virtual_hosts_are_listed_got_and_watched_and_an_update_arrives_on_the_watch() {
    let api = KubeApi::start();
    api.create(virtual_host("shop", "main", &["shop.example.com"])).unwrap();
    api.create(virtual_host("other", "side", &["side.example.com"]))
        .unwrap();
    let client = client(&api).await;

    let all = cluster::virtual_hosts(&client, &None);
    let listed = all.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&listed.items), ["other/side", "shop/main"]);
    let shop = cluster::virtual_hosts(&client, &Some("shop".to_owned()));
    assert_eq!(
        names(&shop.list(&ListParams::default()).await.unwrap().items),
        ["shop/main"]
    );

    let main = shop.get("main").await.unwrap();
    assert_eq!(generation(&main), 1);
    assert!(main.metadata.uid.as_ref().is_some_and(|uid| !uid.is_empty()));
    assert!(main.metadata.creation_timestamp.is_some());
    assert_eq!(api_error(shop.get("absent").await), (404, "NotFound".to_owned()));

    // Created by a client: the server's metadata, and no status (a status subresource).
    let mut canary = virtual_host("shop", "canary", &["canary.example.com"]);
    canary["status"] = json!({"routeCount": 9});
    let created = shop.create(&PostParams::default(), &dynamic(canary)).await.unwrap();
    assert_eq!(generation(&created), 1);
    assert!(created.data.get("status").is_none(), "{:?}", created.data);
    let again = shop.create(&PostParams::default(), &created).await;
    assert_eq!(api_error(again), (409, "AlreadyExists".to_owned()));

    // The controller's own watch.
    let mut events = cluster::watch(&client, &[Some("shop".to_owned())]).map(|(_, event)| event);
    let mut initial = Vec::new();
    loop {
        match next(&mut events).await {
            Event::Init => {}
            Event::InitApply(object) => initial.push(object),
            Event::InitDone => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(names(&initial), ["shop/canary", "shop/main"]);

    // A new spec: the watch sees the object with its new generation.
    let before = api.get(Resource::VirtualHosts, "shop", "main").unwrap();
    let replaced = api
        .replace(virtual_host("shop", "main", &["moved.example.com"]))
        .unwrap();
    assert!(version(&replaced) > version(&before));
    match next(&mut events).await {
        Event::Apply(object) => {
            assert_eq!(names(std::slice::from_ref(&object)), ["shop/main"]);
            assert_eq!(generation(&object), 2);
            assert_eq!(object.data["spec"]["hosts"], json!(["moved.example.com"]));
            assert_eq!(object.metadata.resource_version, Some(version(&replaced).to_string()));
        }
        other => panic!("expected the update, got {other:?}"),
    }
    // Another namespace's change is not this watch's.
    api.replace(virtual_host("other", "side", &["elsewhere.example.com"]))
        .unwrap();
    api.delete(Resource::VirtualHosts, "shop", "canary").unwrap();
    match next(&mut events).await {
        Event::Delete(object) => assert_eq!(object.metadata.name.as_deref(), Some("canary")),
        other => panic!("expected the deletion, got {other:?}"),
    }
}

#[tokio::test]
async fn a_status_merge_patch_keeps_the_other_fields_and_not_the_generation() {
    let api = KubeApi::start();
    let mut object = virtual_host("shop", "main", &["shop.example.com"]);
    let accepted = json!({"type": "Accepted", "status": "True", "observedGeneration": 1,
                          "lastTransitionTime": "2026-03-04T05:06:07Z", "reason": "Accepted", "message": "ok"});
    object["status"] = json!({"routeCount": 1, "conditions": [accepted]});
    let stored = api.create(object).unwrap();
    let client = client(&api).await;
    let shop = cluster::virtual_hosts(&client, &Some("shop".to_owned()));
    let params = PatchParams::default();

    let patch = Patch::Merge(json!({"status": {"routeCount": 2}}));
    let patched = shop.patch_status("main", &params, &patch).await.unwrap();
    assert_eq!(
        patched.data["status"],
        json!({"routeCount": 2, "conditions": [accepted]})
    );
    assert_eq!(patched.data["spec"], stored["spec"]);
    assert_eq!(generation(&patched), 1);
    let patched_version: u64 = patched.metadata.resource_version.clone().unwrap().parse().unwrap();
    assert!(patched_version > version(&stored));
    assert_eq!(
        api.get(Resource::VirtualHosts, "shop", "main").unwrap()["status"]["routeCount"],
        2
    );

    // The same patch again changes nothing: no new version.
    let same = shop.patch_status("main", &params, &patch).await.unwrap();
    assert_eq!(same.metadata.resource_version, patched.metadata.resource_version);

    // Through the status subresource the spec cannot change; through the main resource the status cannot.
    let both = json!({"spec": {"hosts": ["other.example.com"]}, "status": {"routeCount": 3}});
    let patched = shop.patch_status("main", &params, &Patch::Merge(&both)).await.unwrap();
    assert_eq!(
        (patched.data["status"]["routeCount"].clone(), generation(&patched)),
        (json!(3), 1)
    );
    assert_eq!(patched.data["spec"]["hosts"], json!(["shop.example.com"]));
    let patched = shop.patch("main", &params, &Patch::Merge(&both)).await.unwrap();
    assert_eq!(patched.data["spec"]["hosts"], json!(["other.example.com"]));
    assert_eq!(
        (patched.data["status"]["routeCount"].clone(), generation(&patched)),
        (json!(3), 2)
    );

    // Custom resources take no strategic merge patch; a JSON patch is not served.
    let strategic = shop
        .patch_status("main", &params, &Patch::Strategic(json!({"status": {}})))
        .await;
    assert_eq!(api_error(strategic), (415, "UnsupportedMediaType".to_owned()));
    let absent = shop.patch_status("main-absent", &params, &patch).await;
    assert_eq!(api_error(absent), (404, "NotFound".to_owned()));

    let status_patches = RequestKey::new("patch", Resource::VirtualHosts, Some("status"), Some("main"));
    assert_eq!(api.requests()[&status_patches], 4);
}

#[tokio::test]
async fn a_spec_change_bumps_the_generation_and_a_stale_version_conflicts() {
    let api = KubeApi::start();
    let first = api.create(virtual_host("shop", "main", &["a.example.com"])).unwrap();
    assert_eq!(first["metadata"]["generation"], 1);

    // Status and labels are not the spec.
    let mut with_status = virtual_host("shop", "main", &["a.example.com"]);
    with_status["status"] = json!({"routeCount": 1});
    with_status["metadata"]["labels"] = json!({"team": "web"});
    let second = api.replace(with_status.clone()).unwrap();
    assert_eq!(second["metadata"]["generation"], 1);
    assert!(version(&second) > version(&first));
    assert_eq!(second["metadata"]["uid"], first["metadata"]["uid"]);
    assert_eq!(
        second["metadata"]["creationTimestamp"],
        first["metadata"]["creationTimestamp"]
    );
    // Nothing new: no new version.
    assert_eq!(version(&api.replace(with_status.clone()).unwrap()), version(&second));

    let mut moved = with_status;
    moved["spec"]["hosts"] = json!(["b.example.com"]);
    let third = api.replace(moved.clone()).unwrap();
    assert_eq!(third["metadata"]["generation"], 2);
    assert_eq!(third["status"], json!({"routeCount": 1}));

    // A client's replace naming an old resourceVersion is refused.
    let client = client(&api).await;
    let shop = cluster::virtual_hosts(&client, &Some("shop".to_owned()));
    let mut stale = dynamic(second.clone());
    stale.data["spec"]["hosts"] = json!(["c.example.com"]);
    let refused = shop.replace("main", &PostParams::default(), &stale).await;
    assert_eq!(api_error(refused), (409, "Conflict".to_owned()));
    let mut current = dynamic(third);
    current.data["spec"]["hosts"] = json!(["c.example.com"]);
    let replaced = shop.replace("main", &PostParams::default(), &current).await.unwrap();
    assert_eq!(generation(&replaced), 3);
    assert_eq!(
        replaced.data["status"],
        json!({"routeCount": 1}),
        "a replace keeps the status"
    );
}

fn config_map(name: &str, labels: Value, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}, "data": data}))
    .unwrap()
}

#[tokio::test]
async fn config_maps_are_selected_by_label_listed_watched_patched_and_deleted() {
    let api = KubeApi::start();
    let client = client(&api).await;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "edge");
    let post = PostParams::default();
    for (name, labels) in [
        ("report-a", json!({"app": "report", "replica": "a"})),
        ("report-b", json!({"app": "report", "replica": "b"})),
        ("unrelated", json!({"app": "other"})),
    ] {
        let created = maps
            .create(&post, &config_map(name, labels, json!({"programmed": "0"})))
            .await
            .unwrap();
        assert_eq!(created.metadata.namespace.as_deref(), Some("edge"));
    }
    let name = |map: &ConfigMap| map.metadata.name.clone().unwrap();
    let selected = maps.list(&ListParams::default().labels("app=report")).await.unwrap();
    assert_eq!(
        selected.items.iter().map(name).collect::<Vec<_>>(),
        ["report-a", "report-b"]
    );
    let not_b = maps
        .list(&ListParams::default().labels("app=report,replica!=b"))
        .await
        .unwrap();
    assert_eq!(not_b.items.iter().map(name).collect::<Vec<_>>(), ["report-a"]);
    let set_based = maps.list(&ListParams::default().labels("app in (report)")).await;
    assert_eq!(api_error(set_based), (400, "BadRequest".to_owned()));
    // Paged: two pages of one, then the rest.
    let first = maps
        .list(&ListParams::default().labels("app=report").limit(1))
        .await
        .unwrap();
    assert_eq!(first.items.iter().map(name).collect::<Vec<_>>(), ["report-a"]);
    let token = first.metadata.continue_.clone().expect("a continue token");
    let rest = maps
        .list(
            &ListParams::default()
                .labels("app=report")
                .limit(1)
                .continue_token(&token),
        )
        .await
        .unwrap();
    assert_eq!(rest.items.iter().map(name).collect::<Vec<_>>(), ["report-b"]);
    assert_eq!(rest.metadata.continue_.as_deref().unwrap_or_default(), "");

    let mut events = watcher::watcher(maps.clone(), watcher::Config::default().labels("app=report")).boxed();
    assert!(matches!(next(&mut events).await, Event::Init));
    for expected in ["report-a", "report-b"] {
        match next(&mut events).await {
            Event::InitApply(map) => assert_eq!(name(&map), expected),
            other => panic!("expected {expected}, got {other:?}"),
        }
    }
    assert!(matches!(next(&mut events).await, Event::InitDone));

    let params = PatchParams::default();
    let patched = maps
        .patch("report-a", &params, &Patch::Merge(json!({"data": {"programmed": "3"}})))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["programmed"], "3");
    assert_eq!(
        patched.metadata.labels.unwrap()["replica"],
        "a",
        "a merge patch keeps the labels"
    );
    match next(&mut events).await {
        Event::Apply(map) => assert_eq!(map.data.unwrap()["programmed"], "3"),
        other => panic!("expected the patch, got {other:?}"),
    }
    // The unselected one changes unseen; one leaving the selection is deleted for the watch.
    maps.patch("unrelated", &params, &Patch::Merge(json!({"data": {"x": "y"}})))
        .await
        .unwrap();
    maps.patch(
        "report-b",
        &params,
        &Patch::Merge(json!({"metadata": {"labels": {"app": "gone"}}})),
    )
    .await
    .unwrap();
    match next(&mut events).await {
        Event::Delete(map) => assert_eq!(name(&map), "report-b"),
        other => panic!("expected report-b to leave, got {other:?}"),
    }
    maps.delete("report-a", &DeleteParams::default()).await.unwrap();
    match next(&mut events).await {
        Event::Delete(map) => assert_eq!(name(&map), "report-a"),
        other => panic!("expected the deletion, got {other:?}"),
    }
    quiet(&mut events, Duration::from_millis(300)).await;
    assert_eq!(api_error(maps.get("report-a").await), (404, "NotFound".to_owned()));
    let left: Vec<String> = api
        .list(Resource::ConfigMaps, Some("edge"))
        .iter()
        .map(|map| map["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(left, ["report-b", "unrelated"]);
}

#[tokio::test]
async fn a_closed_watch_resumes_from_its_version_without_a_new_list() {
    let api = KubeApi::start();
    let client = client(&api).await;
    let maps: Api<ConfigMap> = Api::namespaced(client, "edge");
    let mut events = watcher::watcher(maps.clone(), watcher::Config::default()).boxed();
    assert!(matches!(next(&mut events).await, Event::Init));
    assert!(matches!(next(&mut events).await, Event::InitDone));
    let mut one = serde_json::to_value(config_map("one", json!({}), json!({}))).unwrap();
    // The handle's objects name their namespace.
    assert_eq!(api.create(one.clone()).unwrap_err().code, 400);
    one["metadata"]["namespace"] = json!("edge");
    api.create(one).unwrap();
    assert!(matches!(next(&mut events).await, Event::Apply(_)));

    api.close_watches();
    let mut two = serde_json::to_value(config_map("two", json!({}), json!({}))).unwrap();
    two["metadata"]["namespace"] = json!("edge");
    api.create(two).unwrap();
    match next(&mut events).await {
        Event::Apply(map) => assert_eq!(map.metadata.name.as_deref(), Some("two")),
        other => panic!("expected two, got {other:?}"),
    }
    assert_eq!(api.request_count("list", Resource::ConfigMaps), 1);
    assert_eq!(api.request_count("watch", Resource::ConfigMaps), 2);
}

fn secret(namespace: &str, name: &str, type_: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": type_,
           "metadata": {"namespace": namespace, "name": name}, "data": {"tls.key": "c2VjcmV0"}})
}

#[tokio::test]
async fn tls_secrets_are_watched_by_type_as_metadata_only() {
    let api = KubeApi::start();
    api.create(secret("shop", "shop-tls", "kubernetes.io/tls")).unwrap();
    api.create(secret("shop", "opaque", "Opaque")).unwrap();
    let client = client(&api).await;
    // What the controller's binary watches.
    let metas: Api<PartialObjectMeta<Secret>> = Api::all(client.clone());
    let config = watcher::Config::default().fields("type=kubernetes.io/tls");
    let mut events = watcher::watcher(metas, config).boxed();
    assert!(matches!(next(&mut events).await, Event::Init));
    match next(&mut events).await {
        Event::InitApply(meta) => {
            assert_eq!(meta.metadata.name.as_deref(), Some("shop-tls"));
            assert_eq!(meta.types.unwrap().kind, "PartialObjectMetadata");
        }
        other => panic!("expected shop-tls, got {other:?}"),
    }
    assert!(matches!(next(&mut events).await, Event::InitDone));
    api.create(secret("shop", "more-opaque", "Opaque")).unwrap();
    api.create(secret("other", "other-tls", "kubernetes.io/tls")).unwrap();
    match next(&mut events).await {
        Event::Apply(meta) => assert_eq!(meta.metadata.name.as_deref(), Some("other-tls")),
        other => panic!("expected other-tls, got {other:?}"),
    }

    // The metadata list carries no data; a full GET does.
    let list = aether_e2e::http::request(
        api.addr(),
        "GET",
        "localhost",
        "/api/v1/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls",
        &[(
            "accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )],
    )
    .unwrap();
    let list: Value = serde_json::from_slice(&list.body).unwrap();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|item| item.get("data").is_none())
    );
    let full: Secret = Api::namespaced(client, "shop").get("shop-tls").await.unwrap();
    assert_eq!(full.type_.as_deref(), Some("kubernetes.io/tls"));
    assert_eq!(full.data.unwrap()["tls.key"].0, b"secret");
}

#[tokio::test]
async fn unknown_paths_and_bad_bodies_get_a_status_and_requests_are_counted() {
    let api = KubeApi::start();
    let client = client(&api).await;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "edge");
    assert_eq!(api_error(maps.get("report").await), (404, "NotFound".to_owned()));
    maps.create(&PostParams::default(), &config_map("report", json!({}), json!({})))
        .await
        .unwrap();
    maps.patch(
        "report",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "b"}})),
    )
    .await
    .unwrap();
    maps.list(&ListParams::default()).await.unwrap();
    maps.delete("report", &DeleteParams::default()).await.unwrap();

    let send = |method: &str, path: &str, content_type: &str, body: &[u8]| {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", content_type)
            .body(body.to_vec())
            .unwrap();
        let client = client.clone();
        async move { client.request::<Value>(request).await }
    };
    let unknown = send(
        "GET",
        "/apis/example.com/v1/namespaces/a/widgets",
        "application/json",
        b"",
    )
    .await;
    assert_eq!(api_error(unknown), (404, "NotFound".to_owned()));
    for body in [
        &b"{not json"[..],
        b"[1, 2]",
        b"{\"metadata\": 7}",
        b"{\"kind\": \"Secret\"}",
    ] {
        let bad = send("POST", "/api/v1/namespaces/edge/configmaps", "application/json", body).await;
        assert_eq!(
            api_error(bad),
            (400, "BadRequest".to_owned()),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    let bad_name = send(
        "POST",
        "/api/v1/namespaces/edge/configmaps",
        "application/json",
        br#"{"metadata": {"name": "Bad/Name"}}"#,
    )
    .await;
    assert_eq!(api_error(bad_name), (400, "BadRequest".to_owned()));
    let no_manager = send(
        "PATCH",
        "/api/v1/namespaces/edge/configmaps/x",
        "application/apply-patch+yaml",
        b"data: {a: b}",
    )
    .await;
    assert_eq!(api_error(no_manager), (400, "BadRequest".to_owned()));
    let bad_method = send("DELETE", "/api/v1/namespaces/edge/configmaps", "application/json", b"").await;
    assert_eq!(api_error(bad_method), (405, "MethodNotAllowed".to_owned()));
    let bad_version = send(
        "GET",
        "/api/v1/configmaps?watch=true&resourceVersion=abc",
        "application/json",
        b"",
    )
    .await;
    assert_eq!(api_error(bad_version), (400, "BadRequest".to_owned()));
    // A YAML apply with a manager creates.
    let applied = send(
        "PATCH",
        "/api/v1/namespaces/edge/configmaps/yaml?fieldManager=test",
        "application/apply-patch+yaml",
        b"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n",
    )
    .await
    .unwrap();
    assert_eq!(applied["data"], json!({"a": "b"}));

    let key = |verb: &str, name: Option<&str>| RequestKey::new(verb, Resource::ConfigMaps, None, name);
    let expected = [
        (key("get", Some("report")), 1),
        (key("create", None), 6),
        (key("patch", Some("report")), 1),
        (key("patch", Some("x")), 1),
        (key("patch", Some("yaml")), 1),
        (key("list", None), 1),
        (key("delete", Some("report")), 1),
        (key("watch", None), 1),
    ];
    assert_eq!(api.requests(), expected.into_iter().collect());
}

/// A Lease apply as kube-lease-manager sends it, taking the Lease for `holder`.
fn take(holder: &str) -> Patch<Value> {
    Patch::Apply(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 30}}))
}

#[tokio::test]
async fn a_second_applier_of_the_lease_holder_conflicts_unless_it_forces() {
    let api = KubeApi::start();
    let client = client(&api).await;
    let leases: Api<Lease> = Api::namespaced(client, "aether");
    assert_eq!(api_error(leases.get("edge").await), (404, "NotFound".to_owned()));
    let created = leases
        .patch("edge", &PatchParams::apply("mgr-a"), &take("a"))
        .await
        .unwrap();
    assert_eq!(created.spec.unwrap().holder_identity.as_deref(), Some("a"));
    // The same manager renews; another one is refused, unless it forces.
    leases
        .patch("edge", &PatchParams::apply("mgr-a"), &take("a"))
        .await
        .unwrap();
    let refused = leases.patch("edge", &PatchParams::apply("mgr-b"), &take("b")).await;
    assert_eq!(api_error(refused), (409, "Conflict".to_owned()));
    // A strategic merge patch (an update) never conflicts, and takes what it changes.
    let release = Patch::Strategic(json!({"spec": {"holderIdentity": null}}));
    leases.patch("edge", &PatchParams::default(), &release).await.unwrap();
    let taken = leases
        .patch("edge", &PatchParams::apply("mgr-b"), &take("b"))
        .await
        .unwrap();
    assert_eq!(taken.spec.unwrap().holder_identity.as_deref(), Some("b"));
    let forced = leases
        .patch("edge", &PatchParams::apply("mgr-a").force(), &take("a"))
        .await
        .unwrap();
    assert_eq!(forced.spec.unwrap().holder_identity.as_deref(), Some("a"));
    // mgr-b set leaseDurationSeconds to the value it had: they share it.
    assert_eq!(api.managers(Resource::Leases, "aether", "edge"), ["mgr-a", "mgr-b"]);
}

/// Waits (up to `within`) until exactly one of `leading` is true; returns its index.
async fn one_leader(leading: &[&tokio::sync::watch::Receiver<bool>], within: Duration) -> usize {
    tokio::time::timeout(within, async {
        loop {
            let leaders: Vec<usize> = (0..leading.len()).filter(|&i| *leading[i].borrow()).collect();
            assert!(leaders.len() <= 1, "two leaders at once: {leaders:?}");
            if let [leader] = leaders[..] {
                return leader;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("a leader in time")
}

fn holder(api: &KubeApi, name: &str) -> Option<String> {
    let lease = api.get(Resource::Leases, "aether", name)?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

/// The controller's election: one of two replicas leads; once it leaves,
/// the other takes over (when the Lease it saw held expires: 30 s).
#[tokio::test]
async fn of_two_joined_replicas_one_leads_and_the_other_takes_over_when_it_leaves() {
    let api = KubeApi::start();
    let mut joined = Vec::new();
    for identity in ["replica-a", "replica-b"] {
        let client = client(&api).await;
        joined.push(
            leader::join(client, "aether", "edge-lease", Some(identity.to_owned()))
                .await
                .unwrap(),
        );
    }
    let leading = [&joined[0].0, &joined[1].0];
    let first = one_leader(&leading, Duration::from_secs(15)).await;
    let identities = ["replica-a", "replica-b"];
    assert_eq!(holder(&api, "edge-lease").as_deref(), Some(identities[first]));
    // It stays one.
    let stable = tokio::time::timeout(Duration::from_millis(500), one_leader(&leading, Duration::from_secs(1))).await;
    assert_eq!(stable.unwrap(), first);

    let (receiver, task) = joined.remove(first);
    drop(receiver);
    leader::leave(task, Duration::from_secs(10)).await;
    assert_eq!(holder(&api, "edge-lease"), None, "leaving releases the Lease");
    let (other, _task) = &joined[0];
    let second = one_leader(&[other], Duration::from_secs(40)).await;
    assert_eq!(second, 0);
    assert_eq!(holder(&api, "edge-lease").as_deref(), Some(identities[1 - first]));
    let lease = api.get(Resource::Leases, "aether", "edge-lease").unwrap();
    assert_eq!(lease["spec"]["leaseTransitions"], 2);
}

/// kube-lease-manager with a 2 s Lease: a holder that dies without
/// releasing loses the Lease once it expires, to the replica that forces it.
#[tokio::test]
async fn a_holder_that_dies_loses_the_lease_when_it_expires() {
    let api = KubeApi::start();
    let mut joined = Vec::new();
    for identity in ["a", "b", "c"] {
        let manager = kube_lease_manager::LeaseManagerBuilder::new(client(&api).await, "short")
            .with_namespace("aether")
            .with_identity(identity)
            .with_duration(2)
            .with_grace(1)
            .build()
            .await
            .unwrap();
        joined.push(manager.watch().await);
    }
    let leading: Vec<_> = joined.iter().map(|(receiver, _)| receiver).collect();
    let first = one_leader(&leading, Duration::from_secs(15)).await;
    // Held past several renewals by the same holder.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(one_leader(&leading, Duration::from_secs(1)).await, first);
    // The holder's manager owns every field (kube-lease-manager names it
    // from a random identity, whatever identity it is given).
    let dead = api.managers(Resource::Leases, "aether", "short");
    assert_eq!(dead.len(), 1, "{dead:?}");
    let (receiver, task) = joined.remove(first);
    task.abort(); // Dies: no release.
    drop(receiver);
    let identities: Vec<&str> = ["a", "b", "c"]
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != first)
        .map(|(_, id)| id)
        .collect();
    let leading: Vec<_> = joined.iter().map(|(receiver, _)| receiver).collect();
    let second = one_leader(&leading, Duration::from_secs(20)).await;
    assert_eq!(holder(&api, "short").as_deref(), Some(identities[second]));
    let managers = api.managers(Resource::Leases, "aether", "short");
    assert_eq!(managers.len(), 1, "{managers:?}");
    assert_ne!(managers, dead, "the new holder owns the Lease's fields");
    assert!(api.request_count("patch", Resource::Leases) >= 4);
    assert_eq!(
        api.request_count("create", Resource::Leases),
        1,
        "the Lease is created once"
    );
}
