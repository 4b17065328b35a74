//! Any value of a message, its rules ignored: every field set or not,
//! strings of any characters, numbers at their type's edges. For round
//! trips through the wire and JSON forms, where what matters is that every
//! field the descriptors hold takes a value, not whether it is valid.

use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value};

use crate::Choices;

/// How deep messages nest before message fields are left unset.
const MAX_DEPTH: usize = 8;

/// The most items of a list, or entries of a map.
const MAX_ITEMS: usize = 4;

/// Characters a string is built of: what rules care about (ASCII letters,
/// digits, URL delimiters, `%`, `*`), a space, a control character, NUL,
/// and letters beyond ASCII up to a four-byte one.
const CHARS: &[char] = &[
    'a',
    'z',
    'A',
    '0',
    '9',
    '.',
    '/',
    '*',
    '%',
    '-',
    '_',
    ':',
    '?',
    '#',
    '~',
    ' ',
    '\t',
    '\u{0}',
    '\u{e9}',
    '\u{4e2d}',
    '\u{1f600}',
];

/// Which enum numbers a value takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enums {
    /// Declared ones only: what the JSON forms can name.
    Declared,
    /// Any number (the wire form carries undeclared ones).
    Any,
}

/// Any value of `descriptor`.
pub fn message(descriptor: &MessageDescriptor, choices: &mut dyn Choices, enums: Enums) -> DynamicMessage {
    draw_message(descriptor, choices, enums, 0)
}

fn draw_message(
    descriptor: &MessageDescriptor,
    choices: &mut dyn Choices,
    enums: Enums,
    depth: usize,
) -> DynamicMessage {
    let mut message = DynamicMessage::new(descriptor.clone());
    // One member of each oneof, or none.
    let mut chosen = Vec::new();
    for oneof in descriptor.oneofs().filter(|o| !o.is_synthetic()) {
        let members: Vec<u32> = oneof.fields().map(|f| f.number()).collect();
        chosen.extend(members.get(choices.below(members.len() + 1)));
    }
    for field in descriptor.fields() {
        let decided = field.containing_oneof().is_some_and(|o| !o.is_synthetic());
        let set = if decided {
            chosen.contains(&field.number())
        } else {
            choices.chance(0.5)
        };
        if !set {
            continue;
        }
        if let Some(value) = field_value(&field, choices, enums, depth) {
            message.set_field(&field, value);
        }
    }
    message
}

fn field_value(field: &FieldDescriptor, choices: &mut dyn Choices, enums: Enums, depth: usize) -> Option<Value> {
    if field.is_map() {
        let Kind::Message(entry) = field.kind() else {
            return None;
        };
        let (key, value) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        let mut map = std::collections::HashMap::new();
        for _ in 0..choices.below(MAX_ITEMS + 1) {
            let k = map_key(one(&key.kind(), choices, enums, depth)?)?;
            map.insert(k, one(&value.kind(), choices, enums, depth)?);
        }
        return Some(Value::Map(map));
    }
    if field.is_list() {
        let items: Option<Vec<Value>> = (0..choices.below(MAX_ITEMS + 1))
            .map(|_| one(&field.kind(), choices, enums, depth))
            .collect();
        return items.map(Value::List);
    }
    one(&field.kind(), choices, enums, depth)
}

fn map_key(value: Value) -> Option<MapKey> {
    Some(match value {
        Value::Bool(b) => MapKey::Bool(b),
        Value::I32(i) => MapKey::I32(i),
        Value::I64(i) => MapKey::I64(i),
        Value::U32(u) => MapKey::U32(u),
        Value::U64(u) => MapKey::U64(u),
        Value::String(s) => MapKey::String(s),
        _ => return None,
    })
}

/// An integer of `bits` bits: an edge (0, 1, the extremes) or any.
fn integer(choices: &mut dyn Choices, signed: bool, bits: u32) -> i128 {
    let (min, max) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    match choices.below(5) {
        0 => 0,
        1 => 1,
        2 => min,
        3 => max,
        _ => {
            // Any value, from four draws of 16 bits.
            let raw = (0..4).fold(0u64, |acc, _| (acc << 16) | choices.below(1 << 16) as u64);
            min + i128::from(raw) % (max - min + 1)
        }
    }
}

fn string(choices: &mut dyn Choices) -> String {
    let len = [0, 1, 3, 12, 40][choices.below(5)];
    (0..len).map(|_| CHARS[choices.below(CHARS.len())]).collect()
}

fn one(kind: &Kind, choices: &mut dyn Choices, enums: Enums, depth: usize) -> Option<Value> {
    Some(match kind {
        Kind::Message(m) => {
            if depth >= MAX_DEPTH {
                return None;
            }
            Value::Message(draw_message(m, choices, enums, depth + 1))
        }
        Kind::Bool => Value::Bool(choices.chance(0.5)),
        Kind::String => Value::String(string(choices)),
        Kind::Bytes => Value::Bytes(
            (0..choices.below(16))
                .map(|_| choices.below(256) as u8)
                .collect::<Vec<u8>>()
                .into(),
        ),
        Kind::Enum(e) => Value::EnumNumber(match enums {
            Enums::Declared => {
                let numbers: Vec<i32> = e.values().map(|v| v.number()).collect();
                numbers[choices.below(numbers.len())]
            }
            Enums::Any => i32::try_from(integer(choices, true, 32)).ok()?,
        }),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(i32::try_from(integer(choices, true, 32)).ok()?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(i64::try_from(integer(choices, true, 64)).ok()?),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(u32::try_from(integer(choices, false, 32)).ok()?),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(u64::try_from(integer(choices, false, 64)).ok()?),
        // Finite only: NaN is not equal to itself, so no round trip of it compares.
        Kind::Float => Value::F32([0.0, 1.5, -2.25, f32::MAX, f32::MIN_POSITIVE][choices.below(5)]),
        Kind::Double => Value::F64([0.0, 1.5, -2.25, f64::MAX, f64::MIN_POSITIVE][choices.below(5)]),
    })
}
