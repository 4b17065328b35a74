//! Faults a test injects, as an API server in trouble shows them: the next
//! requests of one [`RequestKey`] answered with an error (etcd failing, a
//! conflict, an expired watch), or held before they are served (an
//! overloaded server, one that never answers). Faults of one key are used
//! in the order they were armed; a request no fault matches is served as usual.

use std::time::Duration;

use super::{ApiError, KubeApi, RequestKey};

/// What a fault does to one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fault {
    /// Answered with this error's `Status`; the store is not touched.
    Fail(ApiError),
    /// Served after this long.
    Delay(Duration),
}

/// One armed fault: the requests it matches, and how many are left.
#[derive(Debug)]
struct Armed {
    key: RequestKey,
    left: u64,
    fault: Fault,
}

/// The armed faults, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Faults(Vec<Armed>);

impl Faults {
    fn arm(&mut self, key: RequestKey, times: u64, fault: Fault) {
        if times > 0 {
            self.0.push(Armed {
                key,
                left: times,
                fault,
            });
        }
    }

    /// The fault for one request of `key`, if any is armed; it is used once
    /// (one armed `u64::MAX` times never runs out).
    pub(crate) fn take(&mut self, key: &RequestKey) -> Option<Fault> {
        let index = self.0.iter().position(|armed| armed.key == *key)?;
        let armed = &mut self.0[index];
        let fault = armed.fault.clone();
        if armed.left != u64::MAX {
            armed.left -= 1;
        }
        if armed.left == 0 {
            self.0.remove(index);
        }
        Some(fault)
    }
}

impl KubeApi {
    /// Answers the next `times` requests of `key` with `error` (`u64::MAX`: every one).
    pub fn fail(&self, key: RequestKey, times: u64, error: ApiError) {
        self.shared.faults().arm(key, times, Fault::Fail(error));
    }

    /// Holds the next `times` requests of `key` for `delay` before serving them (`u64::MAX`: every one).
    pub fn delay(&self, key: RequestKey, times: u64, delay: Duration) {
        self.shared.faults().arm(key, times, Fault::Delay(delay));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::{Value, json};

    use super::*;
    use crate::kube_api::Resource;

    const PATH: &str = "/api/v1/namespaces/shop/configmaps/settings";

    fn get(api: &KubeApi) -> (u16, Value) {
        let response = crate::http::get(api.addr(), "kube", PATH).unwrap();
        (response.status, serde_json::from_slice(&response.body).unwrap())
    }

    #[test]
    fn a_failure_answers_its_key_the_given_times_then_the_store_answers_again() {
        let api = KubeApi::start();
        api.create(json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"namespace": "shop", "name": "settings"}}))
            .unwrap();
        let key = RequestKey::new("get", Resource::ConfigMaps, None, Some("settings"));
        api.fail(key.clone(), 2, ApiError::new(500, "InternalError", "etcd is sad"));
        // Another key is not touched.
        api.fail(
            RequestKey::new("get", Resource::ConfigMaps, None, Some("other")),
            1,
            ApiError::new(409, "Conflict", "not this one"),
        );
        for _ in 0..2 {
            let (code, status) = get(&api);
            assert_eq!(code, 500);
            assert_eq!(
                (&status["kind"], &status["reason"], &status["code"], &status["message"]),
                (
                    &json!("Status"),
                    &json!("InternalError"),
                    &json!(500),
                    &json!("etcd is sad")
                )
            );
        }
        let (code, object) = get(&api);
        assert_eq!((code, &object["metadata"]["name"]), (200, &json!("settings")));
        // Failed requests are requests: counted and logged.
        assert_eq!(api.requests()[&key], 3);
        let log = api.request_log();
        assert_eq!(log.len(), 3);
        assert!(
            log.iter()
                .all(|request| request.key == key && request.namespace.as_deref() == Some("shop"))
        );
        assert!(log.windows(2).all(|pair| pair[0].at <= pair[1].at));
    }

    #[test]
    fn a_delay_holds_its_key_the_given_times_then_the_request_is_served() {
        let api = KubeApi::start();
        api.create(json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"namespace": "shop", "name": "settings"}}))
            .unwrap();
        let key = RequestKey::new("get", Resource::ConfigMaps, None, Some("settings"));
        api.delay(key.clone(), 1, Duration::from_millis(300));
        api.fail(key, 1, ApiError::new(503, "ServiceUnavailable", "later"));
        let started = Instant::now();
        let (code, _) = get(&api);
        assert!(started.elapsed() >= Duration::from_millis(300), "not held");
        assert_eq!(code, 200, "a delayed request is served");
        // The next fault of the key, armed second, comes next; then none.
        assert_eq!(get(&api).0, 503);
        assert_eq!(get(&api).0, 200);
    }

    #[test]
    fn a_fault_armed_for_every_request_never_runs_out() {
        let mut faults = Faults::default();
        let key = RequestKey::new("patch", Resource::VirtualHosts, Some("status"), Some("main"));
        let error = ApiError::new(500, "InternalError", "etcd is sad");
        faults.arm(key.clone(), u64::MAX, Fault::Fail(error.clone()));
        faults.arm(key.clone(), 0, Fault::Delay(Duration::from_secs(1)));
        for _ in 0..1000 {
            assert_eq!(faults.take(&key), Some(Fault::Fail(error.clone())));
        }
        let list = RequestKey::new("list", Resource::VirtualHosts, None, None);
        assert_eq!(faults.take(&list), None);
    }
}
