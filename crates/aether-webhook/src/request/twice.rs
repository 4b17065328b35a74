//! An object's identity given twice: `metadata.name` or
//! `metadata.namespace` written twice in the review's `object` or
//! `oldObject`. kube's types (and k8s-openapi's) keep the last; the API
//! server's strict decoding refuses a field given twice, and never sends
//! one, so a body holding one is not the API server's: it is refused, so
//! that no reading judges an object under one name while another reads
//! the other.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// The first identity field given twice in `body`
/// (`request.object.metadata.name`), if any. Reads only down to the
/// objects' metadata, skipping the rest; a body that is not JSON, or
/// whose parts on the way are not mappings, has none.
pub(crate) fn identity_given_twice(body: &str) -> Option<&'static str> {
    let mut reader = serde_json::Deserializer::from_str(body);
    Level::Review.deserialize(&mut reader).ok().flatten()
}

#[derive(Clone, Copy)]
enum Level {
    Review,
    Request,
    Object { old: bool },
    Metadata { old: bool },
}

impl<'de> DeserializeSeed<'de> for Level {
    type Value = Option<&'static str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Level {
    type Value = Option<&'static str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut name, mut namespace) = (false, false);
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            let next = match (self, key.as_str()) {
                (Level::Review, "request") => Some(Level::Request),
                (Level::Request, "object") => Some(Level::Object { old: false }),
                (Level::Request, "oldObject") => Some(Level::Object { old: true }),
                (Level::Object { old }, "metadata") => Some(Level::Metadata { old }),
                _ => None,
            };
            if let Level::Metadata { old } = self {
                let seen = match key.as_str() {
                    "name" => &mut name,
                    "namespace" => &mut namespace,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                };
                if *seen && found.is_none() {
                    found = Some(match (old, key.as_str()) {
                        (false, "name") => "request.object.metadata.name",
                        (false, _) => "request.object.metadata.namespace",
                        (true, "name") => "request.oldObject.metadata.name",
                        (true, _) => "request.oldObject.metadata.namespace",
                    });
                }
                *seen = true;
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            match next {
                // A part that is not a mapping holds no identity.
                Some(level) => {
                    let inner = map.next_value_seed(Lenient(level))?;
                    found = found.or(inner);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// A level that takes any value, finding nothing in one that is not a mapping.
struct Lenient(Level);

impl<'de> DeserializeSeed<'de> for Lenient {
    type Value = Option<&'static str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Lenient {
    type Value = Option<&'static str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(map)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut items: A) -> Result<Self::Value, A::Error> {
        while items.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}
