//! The reference validator: protovalidate 2.x (Python), on the edition-2024
//! descriptors, through `crates/aether-api/tests/reference/protovalidate_judge.py`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use base64::Engine as _;

/// One violation as protovalidate reports it: (proto field path, rule id, message).
pub type Reported = (String, String, String);

/// protovalidate's answer for each `(message full name, binary)`, in order,
/// each answer sorted. Paths are protovalidate's (`tls.secret_name`).
pub fn judge(messages: &[(&str, Vec<u8>)]) -> Vec<Vec<Reported>> {
    judge_with(
        &crate::workspace_root().join("generated/descriptors/aether.binpb"),
        messages,
    )
}

/// [`judge`] with the rules of another descriptor set (edition 2024, with
/// imports), such as an earlier commit's.
pub fn judge_with(descriptors: &std::path::Path, messages: &[(&str, Vec<u8>)]) -> Vec<Vec<Reported>> {
    let root = crate::workspace_root();
    let script = root.join("crates/aether-api/tests/reference/protovalidate_judge.py");
    let mut child = Command::new(crate::reference_python())
        .arg(&script)
        .arg("--descriptors")
        .arg(descriptors)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("running {}: {err}", script.display()));
    let input: String = messages
        .iter()
        .map(|(name, bytes)| format!("{name} {}\n", base64::engine::general_purpose::STANDARD.encode(bytes)))
        .collect();
    let mut stdin = child.stdin.take().unwrap();
    // Written from another thread: the judge answers as it reads, and a full
    // stdout pipe would otherwise block both sides.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let answers: Vec<_> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|line| {
            let line = line.unwrap();
            let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert!(answer.get("error").is_none(), "the judge failed: {answer}");
            let mut found: Vec<_> = answer["violations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| {
                    let text = |key: &str| v[key].as_str().unwrap().to_owned();
                    (text("field"), text("rule_id"), text("message"))
                })
                .collect();
            found.sort();
            found
        })
        .collect();
    writer.join().unwrap().unwrap();
    assert!(child.wait().unwrap().success(), "the judge exited with an error");
    assert_eq!(answers.len(), messages.len(), "one answer per message");
    answers
}

/// A protovalidate field path in the Kubernetes JSON form, under `root`:
/// each field name in lowerCamelCase (protobuf's json_name), indexes and
/// map keys (`labels["a.b"]`) kept as they are.
pub fn kubernetes_path(root: &str, proto_path: &str) -> String {
    let mut out = String::from(root);
    let mut rest = proto_path;
    while !rest.is_empty() {
        // A field name, up to a subscript or the next field.
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let (name, after) = rest.split_at(end);
        if !name.is_empty() {
            if !out.is_empty() {
                out.push('.');
            }
            let mut upper = false;
            for c in name.chars() {
                match c {
                    '_' => upper = true,
                    c if upper => {
                        out.push(c.to_ascii_uppercase());
                        upper = false;
                    }
                    c => out.push(c),
                }
            }
        }
        rest = after;
        // Subscripts, copied whole: a quoted key may hold dots and brackets.
        while let Some(subscript) = rest.strip_prefix('[') {
            let close = subscript_end(subscript);
            out.push('[');
            out.push_str(&subscript[..=close]);
            rest = &subscript[close + 1..];
        }
        rest = rest.strip_prefix('.').unwrap_or(rest);
    }
    out
}

/// The index of the `]` closing a subscript whose text starts at `text`.
fn subscript_end(text: &str) -> usize {
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            ']' if !in_string => return i,
            _ => {}
        }
    }
    panic!("an unclosed subscript in a protovalidate path: [{text}")
}
