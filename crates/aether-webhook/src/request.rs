//! Reading an AdmissionReview request body into what the judgement uses.
//!
//! The body is read borrowed: the strings the judgement uses point into
//! it, the parts it does not use are checked and skipped, and the object's
//! `spec` is kept as its JSON text, decoded once into the typed spec
//! (`aether_manifests::objects::decode_spec_json`) with no JSON tree in
//! between. kube's `AdmissionReview<DynamicObject>` stays the reference:
//! the borrowed reading checks the parts the judgement does not use as
//! kube's own types read them (`userInfo`, `metadata`, the
//! group/version/kinds: `request/kube_shapes.rs`), and gives up on any
//! body kube's types might read otherwise (not a mapping where kube's
//! types want one, a field given twice, another review version); kube's
//! types then read it, and say what is wrong as before. So every body gets
//! the answer it got when kube's types read them all.

mod kube_shapes;
mod twice;

pub(crate) use twice::identity_given_twice;

use std::borrow::Cow;
use std::fmt;

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::admission::{REVIEW_API_VERSION, REVIEW_KIND};

/// What the judgement reads of a request: borrowed from the body when read
/// from it, owned when kube's types read it.
#[derive(Debug)]
pub struct Request<'a> {
    pub uid: Cow<'a, str>,
    /// The kind of the object under review.
    pub kind: Kind<'a>,
    pub sub_resource: Option<Cow<'a, str>>,
    /// The request's `name` (empty when not given).
    pub name: Cow<'a, str>,
    pub namespace: Option<Cow<'a, str>>,
    pub operation: Operation,
    pub object: Option<Object<'a>>,
}

/// The group, version and kind of a request's object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind<'a> {
    pub group: Cow<'a, str>,
    pub version: Cow<'a, str>,
    pub kind: Cow<'a, str>,
}

/// What the judgement reads of the object under review.
#[derive(Debug)]
pub struct Object<'a> {
    /// `metadata.name` and `metadata.namespace`.
    pub name: Option<Cow<'a, str>>,
    pub namespace: Option<Cow<'a, str>>,
    /// `None` when the object has no `spec`.
    pub spec: Option<Spec<'a>>,
}

/// An object's `spec`, as read.
#[derive(Debug)]
pub enum Spec<'a> {
    /// Its JSON text in the body.
    Text(&'a RawValue),
    /// As kube's types read it.
    Tree(Value),
}

impl From<AdmissionRequest<DynamicObject>> for Request<'static> {
    fn from(request: AdmissionRequest<DynamicObject>) -> Self {
        Request {
            uid: Cow::Owned(request.uid),
            kind: Kind {
                group: Cow::Owned(request.kind.group),
                version: Cow::Owned(request.kind.version),
                kind: Cow::Owned(request.kind.kind),
            },
            sub_resource: request.sub_resource.map(Cow::Owned),
            name: Cow::Owned(request.name),
            namespace: request.namespace.map(Cow::Owned),
            operation: request.operation,
            object: request.object.map(|mut object| Object {
                name: object.metadata.name.map(Cow::Owned),
                namespace: object.metadata.namespace.map(Cow::Owned),
                spec: object.data.get_mut("spec").map(|spec| Spec::Tree(spec.take())),
            }),
        }
    }
}

/// The answer to a request before it is judged: allowed, naming the
/// request's uid, in the review's version (what kube's
/// `AdmissionResponse::from` makes of a request).
pub fn response_to(request: &Request<'_>) -> AdmissionResponse {
    // The response's type cannot be built field by field from here (it is
    // non-exhaustive); `invalid` is the constructor that takes no request.
    let mut response = AdmissionResponse::invalid("");
    response.types.api_version = REVIEW_API_VERSION.to_owned();
    response.types.kind = REVIEW_KIND.to_owned();
    response.uid = request.uid.clone().into_owned();
    response.allowed = true;
    response.result = Default::default();
    response
}

/// The request of `body`, read borrowed; `None` when the borrowed reading
/// does not take the body (see the module's note), to be read by kube's
/// types. `body` is JSON checked for depth already; as text, its strings
/// are not checked for UTF-8 again.
pub fn read_borrowed(body: &str) -> Option<Request<'_>> {
    let mut reader = serde_json::Deserializer::from_str(body);
    let review = WireReview::deserialize(MapOnly(&mut reader)).ok()?;
    reader.end().ok()?;
    if review.api_version.0 != REVIEW_API_VERSION || review.kind.0 != REVIEW_KIND {
        return None;
    }
    let request = review.request?.0;
    Some(Request {
        uid: request.uid.0,
        kind: Kind {
            group: request.kind.group.0,
            version: request.kind.version.0,
            kind: request.kind.kind.0,
        },
        sub_resource: request.sub_resource.map(|s| s.0),
        name: request.name.0,
        namespace: request.namespace.map(|s| s.0),
        operation: request.operation,
        object: request.object.map(|object| Object {
            name: object.0.metadata.name,
            namespace: object.0.metadata.namespace,
            spec: object.0.spec.map(Spec::Text),
        }),
    })
}

// The wire form, field for field as kube's `AdmissionReview` and
// `AdmissionRequest` and `DynamicObject` declare it, each type as strict
// as theirs or stricter. Fields read only to be checked are checked as
// their kube types read them (`kube_shapes`); the judgement's strings are
// borrowed.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireReview<'a> {
    #[serde(borrow)]
    api_version: Text<'a>,
    #[serde(borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    request: Option<Mapping<WireRequest<'a>>>,
    // Boxed: read as kube reads it, without moving its 448 bytes through
    // every layer of the reading (it is absent from a request).
    #[serde(default)]
    #[allow(dead_code)]
    response: Option<Box<AdmissionResponse>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct WireRequest<'a> {
    #[serde(borrow)]
    uid: Text<'a>,
    #[serde(borrow)]
    kind: kube_shapes::GroupVersionKind<'a>,
    #[serde(borrow)]
    resource: kube_shapes::GroupVersionResource<'a>,
    #[serde(borrow, default)]
    sub_resource: Option<Text<'a>>,
    #[serde(borrow, default)]
    request_kind: Option<kube_shapes::GroupVersionKind<'a>>,
    #[serde(borrow, default)]
    request_resource: Option<kube_shapes::GroupVersionResource<'a>>,
    #[serde(borrow, default)]
    request_sub_resource: Option<Text<'a>>,
    #[serde(borrow, default)]
    name: Text<'a>,
    #[serde(borrow, default)]
    namespace: Option<Text<'a>>,
    operation: Operation,
    user_info: kube_shapes::UserInfo,
    #[serde(borrow)]
    object: Option<Mapping<WireObject<'a>>>,
    #[serde(borrow)]
    old_object: Option<Mapping<WireObject<'a>>>,
    #[serde(default)]
    dry_run: bool,
    // kube's `RawExtension` takes any JSON, as this does.
    #[serde(default)]
    options: Option<IgnoredAny>,
}

/// kube's `DynamicObject`: `metadata`, and the rest any JSON, of which the
/// judgement reads `spec`.
#[derive(Deserialize)]
struct WireObject<'a> {
    #[serde(borrow, default)]
    metadata: kube_shapes::Meta<'a>,
    // Present, even as `null` (which `Option` alone would read as absent):
    // a `null` spec is judged as kube's types give it.
    #[serde(borrow, default, deserialize_with = "present")]
    spec: Option<&'a RawValue>,
}

fn present<'de: 'a, 'a, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'a RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// A string, borrowed from the body unless it holds escapes.
#[derive(Default)]
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

/// A struct read from a JSON mapping only. A derived struct also reads
/// one from a list of its fields in order; kube's types read the review
/// and the objects (which flatten fields) from mappings only.
struct Mapping<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Mapping<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(MapOnly(deserializer)).map(Mapping)
    }
}

/// A deserializer giving mappings only, whatever is asked of it.
struct MapOnly<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}
