//! An object's identity given twice: `metadata.name` or
//! `metadata.namespace` written twice in the review's `object` or
//! `oldObject`. kube's types (and k8s-openapi's) keep the last; the API
//! server's strict decoding refuses a field given twice, and never sends
//! one, so a body holding one is not the API server's: it is refused, so
//! that no reading judges an object under one name while another reads
//! the other.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

/// The first identity field given twice in `body`
/// (`request.object.metadata.name`), if any. Reads only down to the
/// objects' metadata, skipping the rest; a body that is not JSON, or
/// whose parts on the way are not as kube's types read them, has none
/// (kube's types then say what is wrong with it).
pub(crate) fn identity_given_twice(body: &str) -> Option<String> {
    let review = Review::deserialize(&mut serde_json::Deserializer::from_str(body)).ok()?;
    let request = review.request?;
    let twice = |object: Option<Object>| object?.metadata?.0;
    let (object, field) = match twice(request.object) {
        Some(field) => ("object", field),
        None => ("oldObject", twice(request.old_object)?),
    };
    Some(format!("request.{object}.metadata.{field}"))
}

#[derive(Deserialize)]
struct Review {
    request: Option<Request>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    object: Option<Object>,
    old_object: Option<Object>,
}

#[derive(Deserialize)]
struct Object {
    metadata: Option<Twice>,
}

/// An identity field, and the other keys of a metadata mapping.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Name,
    Namespace,
    #[serde(other)]
    Other,
}

/// The first identity field a metadata mapping gives twice.
struct Twice(Option<&'static str>);

impl<'de> Deserialize<'de> for Twice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;

        impl<'de> Visitor<'de> for Keys {
            type Value = Twice;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Twice, A::Error> {
                let (mut name, mut namespace, mut twice) = (false, false, None);
                while let Some(field) = map.next_key::<Field>()? {
                    map.next_value::<IgnoredAny>()?;
                    let (seen, key) = match field {
                        Field::Name => (&mut name, "name"),
                        Field::Namespace => (&mut namespace, "namespace"),
                        Field::Other => continue,
                    };
                    if std::mem::replace(seen, true) {
                        twice = twice.or(Some(key));
                    }
                }
                Ok(Twice(twice))
            }
        }

        deserializer.deserialize_map(Keys)
    }
}
