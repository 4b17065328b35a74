//! URLs to handlers: `/api/v1/...` and `/apis/GROUP/VERSION/...`, namespaced
//! or across namespaces, with the verb from the method and the query.
//! Every error is a `Status` object; no input makes the server panic.

use std::collections::HashMap;
use std::sync::Arc;

use http_body_util::{BodyExt, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderMap, USER_AGENT};
use hyper::{Method, Request, Response};
use serde_json::{Value, json};

use super::faults::Fault;
use super::resource::{ApiError, Resource};
use super::select::Selector;
use super::store::{Key, Source, Target};
use super::watch::{ResponseBody, WatchRequest, partial};
use super::{LoggedRequest, RequestKey, Shared};

/// The largest request body read (the API server's own limit is 3 MiB per object).
const MAX_BODY: usize = 3 * 1024 * 1024;
/// A watch without `timeoutSeconds` ends after this long.
const WATCH_TIMEOUT_SECS: u64 = 1800;

/// What a URL names.
#[derive(Debug, PartialEq, Eq)]
struct Address {
    resource: Resource,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

/// Answers one request.
pub(crate) async fn handle(shared: Arc<Shared>, request: Request<Incoming>) -> Response<ResponseBody> {
    let arrived = std::time::Instant::now();
    let (parts, body) = request.into_parts();
    if parts.uri.path() == "/version" {
        let version =
            json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-aether-mock", "platform": "linux/amd64"});
        return respond(200, &version);
    }
    if parts.method == Method::GET
        && let Some(document) = super::discovery::document(parts.uri.path())
    {
        return respond(200, &document);
    }
    let Some(target) = parse_path(parts.uri.path()) else {
        return error(&ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    };
    let query: HashMap<String, String> = form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
        .into_owned()
        .collect();
    let verb = match verb(&parts.method, &target, &query) {
        Ok(verb) => verb,
        Err(err) => return error(&err),
    };
    let key = RequestKey {
        verb: verb.to_owned(),
        resource: target.resource.plural().to_owned(),
        subresource: target.subresource.clone(),
        name: target.name.clone(),
    };
    shared.count(key.clone());
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            return error(&ApiError::new(
                413,
                "RequestEntityTooLarge",
                "the request body is too large",
            ));
        }
    };
    let content_type = parts.headers.get(CONTENT_TYPE).and_then(|value| value.to_str().ok());
    shared.log(LoggedRequest {
        key: key.clone(),
        namespace: target.namespace.clone(),
        at: arrived,
        content_type: content_type.unwrap_or_default().to_owned(),
        body: body.to_vec(),
    });
    let fault = shared.faults().take(&key);
    match fault {
        Some(Fault::Fail(err)) => return error(&err),
        Some(Fault::Delay(delay)) => tokio::time::sleep(delay).await,
        None => {}
    }
    let request = Call {
        shared,
        target,
        query,
        headers: parts.headers,
        body,
    };
    match request.dispatch(verb) {
        Ok(response) => response,
        Err(err) => error(&err),
    }
}

/// `/api/v1/[namespaces/NS/]PLURAL[/NAME[/SUB]]` and the same under
/// `/apis/GROUP/VERSION/`; `None` for anything else.
fn parse_path(path: &str) -> Option<Address> {
    let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (Some((*namespace).to_owned()), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(*name), None),
        [plural, name, sub] => (*plural, Some(*name), Some(*sub)),
        _ => return None,
    };
    let resource = Resource::find(group, version, plural)?;
    let empty = |part: Option<&str>| part.is_some_and(str::is_empty);
    if empty(namespace.as_deref()) || empty(name) || empty(subresource) {
        return None;
    }
    // A named object of a namespaced kind lives in a namespace.
    if name.is_some() && namespace.is_none() {
        return None;
    }
    if subresource.is_some_and(|sub| sub != "status" || !resource.has_status()) {
        return None;
    }
    Some(Address {
        resource,
        namespace,
        name: name.map(str::to_owned),
        subresource: subresource.map(str::to_owned),
    })
}

/// The Kubernetes verb of a request (`list`, `watch`, `patch`...), or 405;
/// one of [`Resource::VERBS`] (of [`Resource::STATUS_VERBS`] on a `status`).
fn verb(method: &Method, target: &Address, query: &HashMap<String, String>) -> Result<&'static str, ApiError> {
    let named = target.name.is_some();
    let collection = target.namespace.is_some() && !named;
    let verb = match *method {
        Method::GET if named => "get",
        Method::GET if matches!(query.get("watch").map(String::as_str), Some("true" | "1")) => "watch",
        Method::GET => "list",
        Method::POST if collection => "create",
        Method::PUT if named => "update",
        Method::PATCH if named => "patch",
        Method::DELETE if named && target.subresource.is_none() => "delete",
        _ => {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                format!("the server does not allow this method on the requested resource: {method}"),
            ));
        }
    };
    Ok(verb)
}

/// One request being answered.
struct Call {
    shared: Arc<Shared>,
    target: Address,
    query: HashMap<String, String>,
    headers: HeaderMap,
    body: Bytes,
}

impl Call {
    fn dispatch(self, verb: &str) -> Result<Response<ResponseBody>, ApiError> {
        if self.query.get("dryRun").is_some_and(|dry| !dry.is_empty()) {
            return Err(ApiError::bad_request("dryRun is not served by the mock API server"));
        }
        match verb {
            "list" => self.list(),
            "watch" => self.watch(),
            "get" => {
                let object = self.shared.store().get(&self.key())?.clone();
                Ok(respond(200, &self.view(object)))
            }
            "create" => {
                let object = self.json()?;
                let namespace = self.target.namespace.as_deref().unwrap_or_default();
                let created = self.shared.write(|store| {
                    store.create(self.target.resource, namespace, object, &self.manager(), Source::Client)
                })?;
                Ok(respond(201, &created))
            }
            "update" => {
                let object = self.json()?;
                if object["metadata"]["name"]
                    .as_str()
                    .is_some_and(|name| Some(name) != self.target.name.as_deref())
                {
                    return Err(ApiError::bad_request(
                        "the name of the object does not match the name in the URL",
                    ));
                }
                let updated = self
                    .shared
                    .write(|store| store.update(&self.key(), object, &self.manager(), self.write_target()))?;
                Ok(respond(200, &updated))
            }
            "patch" => self.patch(),
            "delete" => {
                let deleted = self.shared.write(|store| store.delete(&self.key()))?;
                Ok(respond(200, &deleted))
            }
            _ => Err(ApiError::new(
                405,
                "MethodNotAllowed",
                format!("verb {verb} is not served"),
            )),
        }
    }

    fn key(&self) -> Key {
        Key::new(
            self.target.resource,
            self.target.namespace.as_deref().unwrap_or_default(),
            self.target.name.as_deref().unwrap_or_default(),
        )
    }

    fn write_target(&self) -> Target {
        match self.target.subresource {
            Some(_) => Target::Status,
            None => Target::Main,
        }
    }

    /// `fieldManager`, else the user agent's product, as the API server names managers.
    fn manager(&self) -> String {
        if let Some(manager) = self.query.get("fieldManager").filter(|m| !m.is_empty()) {
            return manager.clone();
        }
        let agent = self.headers.get(USER_AGENT).and_then(|agent| agent.to_str().ok());
        agent
            .and_then(|agent| agent.split('/').next())
            .filter(|agent| !agent.is_empty())
            .unwrap_or("unknown")
            .to_owned()
    }

    fn header(&self, name: hyper::header::HeaderName) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }

    /// Whether the metadata API is asked for (`as=PartialObjectMetadata[List]`).
    fn metadata_only(&self) -> bool {
        self.header(ACCEPT).contains("as=PartialObjectMetadata")
    }

    fn view(&self, object: Value) -> Value {
        if self.metadata_only() { partial(&object) } else { object }
    }

    fn json(&self) -> Result<Value, ApiError> {
        serde_json::from_slice(&self.body)
            .map_err(|err| ApiError::bad_request(format!("the body is not valid JSON: {err}")))
    }

    fn selector(&self) -> Result<Selector, ApiError> {
        let get = |name: &str| self.query.get(name).map(String::as_str);
        Selector::parse(self.target.resource, get("labelSelector"), get("fieldSelector"))
    }

    /// A list, in pages of `limit` if asked: the `continue` token is the
    /// list's version and the last key served.
    fn list(&self) -> Result<Response<ResponseBody>, ApiError> {
        let selector = self.selector()?;
        let limit = match self.query.get("limit") {
            Some(limit) => limit
                .parse::<usize>()
                .map_err(|_| ApiError::bad_request("invalid limit"))?,
            None => 0,
        };
        let after = match self.query.get("continue").filter(|token| !token.is_empty()) {
            Some(token) => Some(parse_continue(token)?),
            None => None,
        };
        let store = self.shared.store();
        let version = after.as_ref().map_or(store.version(), |(version, _, _)| *version);
        let mut items = Vec::new();
        let mut last: Option<&Key> = None;
        let mut more = false;
        let listed = store.list(self.target.resource, self.target.namespace.as_deref(), &selector);
        for (key, object) in listed {
            if let Some((_, namespace, name)) = &after
                && (key.namespace.as_str(), key.name.as_str()) <= (namespace.as_str(), name.as_str())
            {
                continue;
            }
            if limit > 0 && items.len() == limit {
                more = true;
                break;
            }
            items.push(self.view(object.clone()));
            last = Some(key);
        }
        let mut metadata = json!({"resourceVersion": version.to_string()});
        if let (true, Some(last)) = (more, last) {
            metadata["continue"] = json!(format!("{version}:{}/{}", last.namespace, last.name));
        }
        drop(store);
        let (api_version, kind) = if self.metadata_only() {
            ("meta.k8s.io/v1".to_owned(), "PartialObjectMetadataList".to_owned())
        } else {
            (
                self.target.resource.api_version(),
                format!("{}List", self.target.resource.kind()),
            )
        };
        let list = json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "items": items});
        Ok(respond(200, &list))
    }

    fn watch(&self) -> Result<Response<ResponseBody>, ApiError> {
        let flag = |name: &str| self.query.get(name).is_some_and(|value| value == "true");
        let from = match self.query.get("resourceVersion").map(String::as_str) {
            None | Some("" | "0") => None,
            Some(_) if flag("sendInitialEvents") => None,
            Some(version) => Some(
                version
                    .parse::<u64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {version:?}")))?,
            ),
        };
        let timeout = match self.query.get("timeoutSeconds") {
            Some(secs) => secs
                .parse::<u64>()
                .map_err(|_| ApiError::bad_request("invalid timeoutSeconds"))?,
            None => WATCH_TIMEOUT_SECS,
        };
        let request = WatchRequest {
            resource: self.target.resource,
            namespace: self.target.namespace.clone(),
            selector: self.selector()?,
            from,
            timeout: std::time::Duration::from_secs(timeout),
            metadata_only: self.metadata_only(),
            initial_bookmark: flag("sendInitialEvents") && flag("allowWatchBookmarks"),
        };
        let body = super::watch::start(self.shared.clone(), request);
        Ok(Response::builder()
            .status(200)
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .unwrap_or_else(|_| Response::new(ResponseBody::Whole(None))))
    }

    /// Merge and strategic merge patches (both as RFC 7386), and server-side apply.
    fn patch(&self) -> Result<Response<ResponseBody>, ApiError> {
        let content_type = self.header(CONTENT_TYPE);
        let media = content_type.split(';').next().unwrap_or_default().trim();
        let key = self.key();
        let manager = self.manager();
        match media {
            "application/merge-patch+json" => {}
            "application/strategic-merge-patch+json" if !self.target.resource.is_custom() => {}
            "application/apply-patch+yaml" => {
                let patch = self.yaml()?;
                if !self.query.contains_key("fieldManager") {
                    return Err(ApiError::bad_request("fieldManager is required for apply requests"));
                }
                let force = self.query.get("force").is_some_and(|force| force == "true");
                let (object, created) = self
                    .shared
                    .write(|store| store.apply(&key, patch, &manager, force, self.write_target()))?;
                return Ok(respond(if created { 201 } else { 200 }, &object));
            }
            _ => {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    format!(
                        "the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/apply-patch+yaml; got {content_type:?}"
                    ),
                ));
            }
        }
        let patch = self.json()?;
        let object = self
            .shared
            .write(|store| store.merge_patch(&key, &patch, &manager, self.write_target()))?;
        Ok(respond(200, &object))
    }

    /// An apply body: JSON (what kube sends), or YAML.
    fn yaml(&self) -> Result<Value, ApiError> {
        if let Ok(value) = serde_json::from_slice(&self.body) {
            return Ok(value);
        }
        let text = std::str::from_utf8(&self.body).map_err(|_| ApiError::bad_request("the body is not UTF-8"))?;
        serde_saphyr::from_str(text).map_err(|err| ApiError::bad_request(format!("the body is not valid YAML: {err}")))
    }
}

fn parse_continue(token: &str) -> Result<(u64, String, String), ApiError> {
    let invalid = || ApiError::bad_request(format!("invalid continue token {token:?}"));
    let (version, key) = token.split_once(':').ok_or_else(invalid)?;
    let (namespace, name) = key.split_once('/').ok_or_else(invalid)?;
    let version = version.parse().map_err(|_| invalid())?;
    Ok((version, namespace.to_owned(), name.to_owned()))
}

fn respond(code: u16, value: &Value) -> Response<ResponseBody> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    Response::builder()
        .status(code)
        .header(CONTENT_TYPE, "application/json")
        .body(ResponseBody::Whole(Some(Bytes::from(body))))
        .unwrap_or_else(|_| Response::new(ResponseBody::Whole(None)))
}

fn error(err: &ApiError) -> Response<ResponseBody> {
    respond(err.code, &err.status())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_kinds_namespaces_objects_and_the_status_only() {
        let target = |path| parse_path(path).map(|t| (t.resource, t.namespace, t.name, t.subresource));
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            target("/apis/config.aether.io/v1/namespaces/shop/virtualhosts/main/status"),
            Some((Resource::VirtualHosts, some("shop"), some("main"), some("status")))
        );
        assert_eq!(
            target("/apis/config.aether.io/v1/virtualhosts"),
            Some((Resource::VirtualHosts, None, None, None))
        );
        assert_eq!(
            target("/api/v1/namespaces/a/secrets"),
            Some((Resource::Secrets, some("a"), None, None))
        );
        for bad in [
            "/api/v1/namespaces/a/secrets/s/status",
            "/api/v1/secrets/s",
            "/api/v1/namespaces/a/pods",
            "/apis/config.aether.io/v2/virtualhosts",
            "/api/v1/namespaces//secrets",
            "/api/v1/namespaces/a/secrets/",
            "/api/v1/namespaces/a/secrets/s/status/x",
            "/api/v1/namespaces/a",
            "/",
            "",
        ] {
            assert_eq!(target(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_verbs_served_are_those_discovery_lists() {
        use std::collections::BTreeSet;
        let (mut main, mut status) = (BTreeSet::new(), BTreeSet::new());
        let base = "/apis/config.aether.io/v1";
        let paths = [
            format!("{base}/virtualhosts"),
            format!("{base}/namespaces/a/virtualhosts"),
            format!("{base}/namespaces/a/virtualhosts/v"),
            format!("{base}/namespaces/a/virtualhosts/v/status"),
        ];
        for path in &paths {
            let target = parse_path(path).unwrap();
            for method in [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
                for watch in ["false", "true"] {
                    let query = HashMap::from([("watch".to_owned(), watch.to_owned())]);
                    let Ok(verb) = verb(&method, &target, &query) else {
                        continue;
                    };
                    match target.subresource {
                        Some(_) => status.insert(verb),
                        None => main.insert(verb),
                    };
                }
            }
        }
        assert_eq!(main, BTreeSet::from(Resource::VERBS));
        assert_eq!(status, BTreeSet::from(Resource::STATUS_VERBS));
    }
}
