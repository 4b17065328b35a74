//! The schema walk of [`super::all_known`], over a serde stream: what
//! `walk` does to a tree, read as the text goes by.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::schema::Node;

/// A value of a schema node: accepted when nothing in it is unknown. The
/// error only stops the reading; its text is not shown.
pub(super) struct Known<'s>(pub(super) &'s Node);

impl<'de> DeserializeSeed<'de> for Known<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Known<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value the schema knows")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // As `walk`: a mapping whose schema lists no properties is not looked into.
        let Some(properties) = &self.0.properties else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(());
        };
        while let Some(field) = map.next_key_seed(Field(properties))? {
            let schema = field.ok_or_else(|| de::Error::custom("unknown field"))?;
            map.next_value_seed(Known(schema))?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        // A list the reader cuts (`cut_long_lists`) before decoding is not
        // read further.
        let max = self.0.read_whole_up_to();
        let mut count = 0usize;
        loop {
            let more = match &self.0.items {
                Some(item) => items.next_element_seed(Known(item))?.is_some(),
                None => items.next_element::<IgnoredAny>()?.is_some(),
            };
            if !more {
                return Ok(());
            }
            count += 1;
            if count > max {
                return Err(de::Error::custom("more items than maxItems"));
            }
        }
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        match &self.0.listed {
            Some(allowed) if !super::is_listed(text, allowed) => Err(E::custom("unknown enum value")),
            _ => Ok(()),
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A field name, looked up among `properties` where it is read: no copy of
/// the name, escaped or not.
struct Field<'s>(&'s BTreeMap<String, Node>);

impl<'de, 's> DeserializeSeed<'de> for Field<'s> {
    type Value = Option<&'s Node>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'s> Visitor<'_> for Field<'s> {
    type Value = Option<&'s Node>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
        Ok(self.0.get(name))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{all_known, set_aside};

    /// What `set_aside` finds in the same spec as a tree: nothing, or something.
    fn tree_knows_all(text: &str) -> bool {
        let mut tree: serde_json::Value = serde_json::from_str(text).unwrap();
        set_aside(&mut tree, "spec").is_empty()
    }

    #[test]
    fn the_text_reading_agrees_with_the_tree_walk() {
        let route = json!({"match": {"prefix": "/", "methods": ["GET"]}, "backend": {"service": "web"}});
        let cases = [
            (json!({"hosts": ["a.example.com"], "routes": [route]}), true),
            (
                json!({"hosts": ["a.example.com"], "tls": {"secretName": "t", "provider": "KUBERNETES"}}),
                true,
            ),
            (
                json!({"tls": {"provider": "SECRET_PROVIDER_AWS_SECRETS_MANAGER"}, "routeOrder": "UNSPECIFIED"}),
                true,
            ),
            // Type errors are not this reading's business.
            (json!({"hosts": "a.example.com", "routes": 7, "tls": []}), true),
            (json!(null), true),
            (json!({"mirror": "svc-shadow"}), false),
            (
                json!({"routes": [route, {"match": {"prefix": "/", "ignoreCase": true}}]}),
                false,
            ),
            (json!({"tls": {"provider": "VAULT"}}), false),
            // The types take it; the schema does not list it.
            (json!({"tls": {"provider": "UNSPECIFIED"}}), false),
            (json!({"routes": [{"match": {"methods": ["GET", "BREW"]}}]}), false),
            (json!({"routes": [{"retries": {"retryOn": ["sometimes"]}}]}), false),
        ];
        for (spec, known) in cases {
            let text = spec.to_string();
            assert_eq!(all_known(&text, "spec"), known, "{text}");
            assert_eq!(tree_knows_all(&text), known, "{text}");
        }
    }

    #[test]
    fn a_list_to_be_cut_is_not_all_known() {
        let routes = |k: usize| format!(r#"{{"routes": [{}]}}"#, vec!["{}"; k].join(","));
        assert!(all_known(&routes(4 * 128), "spec"));
        assert!(!all_known(&routes(4 * 128 + 1), "spec"));
    }

    #[test]
    fn a_field_given_twice_is_read_twice() {
        // The tree keeps the last, known value; the text reading sees both.
        let text = r#"{"tls": {"provider": "VAULT", "provider": "KUBERNETES"}}"#;
        assert!(tree_knows_all(text));
        assert!(!all_known(text, "spec"));
        assert!(all_known(r#"{"hosts": [], "hosts": []}"#, "spec"));
    }

    #[test]
    fn escaped_names_and_values_are_read_unescaped() {
        assert!(all_known(
            r#"{"ho\u0073ts": ["a"], "tls": {"provider": "KUBERN\u0045TES"}}"#,
            "spec"
        ));
        assert!(!all_known(r#"{"ho\u0073tz": ["a"]}"#, "spec"));
    }

    #[test]
    fn text_that_is_not_json_is_not_known() {
        for text in ["", "{", "{\"hosts\": [}", "{} {}", "nul"] {
            assert!(!all_known(text, "spec"), "{text}");
        }
    }
}
