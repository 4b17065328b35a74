//! kube's types that a review carries and the judgement does not use,
//! checked without being built: each reader here takes exactly the JSON
//! its kube type takes and refuses the rest, keeping only the strings the
//! judgement reads, borrowed. Building them (k8s-openapi's `ObjectMeta` is
//! 360 bytes, twice in a request and moved through every layer of the
//! reading, with a `String` per field present) cost a tenth to a third of
//! the reading of a review (paired runs).
//!
//! Where a type's reading is more than a string, a list or a map of them
//! (timestamps, managed fields, owner references), its kube type reads
//! it, present or not. The readers mirror k8s-openapi 0.29 and kube-core
//! 5: a field given twice is read twice and the last kept (but the
//! object's `name` and `namespace`: see `request/twice.rs`), unknown fields
//! are skipped, `null` is an absent field; `tests/reading.rs` holds the
//! borrowed reading to kube's answers on every part of a review replaced.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, OwnerReference, Time};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::Text;

/// A JSON string, checked and dropped (kube's `String`). A list of them
/// is read as serde's `Vec<Str>`: of a zero-sized type, it never allocates.
struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;

        impl Visitor<'_> for StrVisitor {
            type Value = Str;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }

        deserializer.deserialize_str(StrVisitor)
    }
}

/// A JSON mapping of strings to `T`s, checked and dropped (kube's
/// `BTreeMap<String, T>`, in which a key given twice keeps the last).
struct StrMap<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for StrMap<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for MapVisitor<T> {
            type Value = StrMap<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrMap<T>, A::Error> {
                while map.next_entry::<Str, T>()?.is_some() {}
                Ok(StrMap(PhantomData))
            }
        }

        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}

/// Reads a mapping as k8s-openapi's generated readers do: each key's value
/// by `value`'s `Fields::read` (which reads it, or says the key is not
/// one of its fields), every other value skipped; mappings only.
fn read_fields<'de, D, V>(
    deserializer: D,
    name: &'static str,
    fields: &'static [&'static str],
    value: V,
) -> Result<V, D::Error>
where
    D: Deserializer<'de>,
    V: Fields<'de>,
{
    struct FieldsVisitor<V>(&'static str, V);

    impl<'de, V: Fields<'de>> Visitor<'de> for FieldsVisitor<V> {
        type Value = V;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<V, A::Error> {
            let mut value = self.1;
            // Keys as k8s-openapi reads them: any string, compared whole.
            while let Some(key) = map.next_key::<Text<'de>>()? {
                if !value.read(&key.0, &mut map)? {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(value)
        }
    }

    deserializer.deserialize_struct(name, fields, FieldsVisitor(name, value))
}

/// Reads the next value as `T` and drops it: checked as `T` reads it.
fn check<'de, T: Deserialize<'de>, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<T>().map(|_| ())
}

/// What [`read_fields`] fills.
trait Fields<'de>: Sized {
    /// Reads the value of `key` when it is a field of this type.
    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error>;
}

/// k8s-openapi's `ObjectMeta`, of which the judgement keeps the name and
/// namespace.
#[derive(Default)]
pub(super) struct Meta<'a> {
    pub name: Option<Cow<'a, str>>,
    pub namespace: Option<Cow<'a, str>>,
    /// Whether `name` and `namespace` were read.
    seen: (bool, bool),
}

impl Meta<'_> {
    fn seen(&mut self, key: &str) -> &mut bool {
        if key == "name" {
            &mut self.seen.0
        } else {
            &mut self.seen.1
        }
    }
}

impl<'de: 'a, 'a> Fields<'de> for Meta<'a> {
    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            // Given twice, the body is refused (`request/twice.rs`): given
            // up on here, so that the reading that refuses it has it.
            "name" | "namespace" if std::mem::replace(self.seen(key), true) => {
                return Err(de::Error::custom("an identity field given twice"));
            }
            "name" => self.name = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
            "namespace" => self.namespace = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
            "annotations" | "labels" => check::<Option<StrMap<Str>>, _>(map)?,
            "finalizers" => check::<Option<Vec<Str>>, _>(map)?,
            "generateName" | "resourceVersion" | "selfLink" | "uid" => check::<Option<Str>, _>(map)?,
            "deletionGracePeriodSeconds" | "generation" => check::<Option<i64>, _>(map)?,
            "creationTimestamp" | "deletionTimestamp" => check::<Option<Time>, _>(map)?,
            "managedFields" => check::<Option<Vec<ManagedFieldsEntry>>, _>(map)?,
            "ownerReferences" => check::<Option<Vec<OwnerReference>>, _>(map)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Meta<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const FIELDS: &[&str] = &[
            "annotations",
            "creationTimestamp",
            "deletionGracePeriodSeconds",
            "deletionTimestamp",
            "finalizers",
            "generateName",
            "generation",
            "labels",
            "managedFields",
            "name",
            "namespace",
            "ownerReferences",
            "resourceVersion",
            "selfLink",
            "uid",
        ];
        read_fields(deserializer, "ObjectMeta", FIELDS, Meta::default())
    }
}

/// k8s-openapi's `UserInfo`, checked.
pub(super) struct UserInfo;

impl<'de> Fields<'de> for UserInfo {
    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "extra" => check::<Option<StrMap<Vec<Str>>>, _>(map)?,
            "groups" => check::<Option<Vec<Str>>, _>(map)?,
            "uid" | "username" => check::<Option<Str>, _>(map)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl<'de> Deserialize<'de> for UserInfo {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        const FIELDS: &[&str] = &["extra", "groups", "uid", "username"];
        read_fields(deserializer, "UserInfo", FIELDS, UserInfo)
    }
}

/// kube's `GroupVersionResource` (derived: every field required but its
/// `api_version`, a field given twice refused, a list of the fields in
/// order taken too), checked.
#[derive(Deserialize)]
#[allow(dead_code)]
pub(super) struct GroupVersionResource<'a> {
    #[serde(borrow)]
    group: Text<'a>,
    #[serde(borrow)]
    version: Text<'a>,
    #[serde(borrow)]
    resource: Text<'a>,
    #[serde(borrow, default)]
    api_version: Text<'a>,
}

/// kube's `GroupVersionKind` (derived as [`GroupVersionResource`]), read
/// borrowed.
#[derive(Deserialize)]
pub(super) struct GroupVersionKind<'a> {
    #[serde(borrow)]
    pub group: Text<'a>,
    #[serde(borrow)]
    pub version: Text<'a>,
    #[serde(borrow)]
    pub kind: Text<'a>,
}
