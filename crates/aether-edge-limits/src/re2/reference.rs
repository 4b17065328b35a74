//! RE2 itself, the reference the guard is compared with: Python's
//! `google-re2` (the version `xtask/requirements.txt` pins, installed into
//! `target/pyenv/` by `cargo xtask pyenv`; `AETHER_PYTHON` names another
//! Python that has it), compiling in Latin-1 as Envoy 1.40 does. One
//! process answers any number of expressions, one JSON line each way, so
//! a test and a fuzz target pay its start once.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Reads one JSON value a line, answers one line. A string is an
/// expression: `{"size": N}` (RE2's `ProgramSize()`). `[regex, text]` (the
/// text's bytes as the characters U+0000 to U+00FF) asks whether the whole
/// text fits: `{"matched": bool}`. Either may be `{"error": "..."}` (RE2's
/// message). `readline` on the binary stream answers each line as it
/// arrives.
const SCRIPT: &str = r#"
import json, sys, re2
options = re2.Options()
options.encoding = re2.Options.Encoding.LATIN1
options.log_errors = False
read, write = sys.stdin.buffer.readline, sys.stdout.write
while True:
    line = read()
    if not line:
        break
    try:
        asked = json.loads(line)
        if isinstance(asked, str):
            answer = {"size": re2.compile(asked.encode(), options).programsize}
        else:
            compiled = re2.compile(asked[0].encode(), options)
            answer = {"matched": compiled.fullmatch(asked[1].encode("latin-1")) is not None}
    except re2.error as error:
        message = error.args[0] if error.args else "refused"
        if isinstance(message, bytes):
            message = message.decode("latin-1")
        answer = {"error": str(message)}
    write(json.dumps(answer) + "\n")
    sys.stdout.flush()
"#;

/// What RE2 made of an expression: its program size, or its message.
pub type Compiled = Result<u64, String>;

/// A running RE2 (one Python process); killed when dropped.
pub struct Re2 {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

/// The pinned Python: `AETHER_PYTHON`, or the workspace's `target/pyenv`.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("AETHER_PYTHON") {
        return PathBuf::from(python);
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("buf.gen.yaml").is_file())
        .unwrap_or_else(|| std::path::Path::new("."));
    root.join("target/pyenv/bin/python")
}

impl Re2 {
    /// Starts RE2; panics, saying how to install it, when the pinned Python
    /// or its `google-re2` is missing (a test needing it never skips).
    pub fn start() -> Self {
        let python = python();
        assert!(
            python.exists(),
            "{} is missing: run `cargo xtask pyenv` to install the pinned RE2 (google-re2), or point AETHER_PYTHON \
             at a Python that has it",
            python.display()
        );
        let mut child = Command::new(&python)
            .args(["-c", SCRIPT])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("{} does not start: {error}", python.display()));
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("a piped stdout"));
        let mut re2 = Self { child, stdin, stdout };
        // Fails here, not on the first real question, without google-re2.
        let answer = re2.compile("a");
        assert!(answer.is_ok(), "RE2 in {} answers {answer:?} for `a`", python.display());
        re2
    }

    /// RE2's answer for one expression.
    pub fn compile(&mut self, regex: &str) -> Compiled {
        let stdin = self.stdin.as_mut().expect("RE2's input is open");
        let mut line = serde_json::to_string(regex).expect("a string encodes");
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|error| panic!("{}", self.failed(&error.to_string())));
        self.answer()
    }

    /// RE2's answers for many expressions, in order.
    pub fn compile_all(regexes: &[String]) -> Vec<Compiled> {
        let questions: Vec<serde_json::Value> = regexes.iter().map(|regex| serde_json::json!(regex)).collect();
        Self::ask_all(&questions)
            .into_iter()
            .map(|answer| Self::read(&answer, "size").map(|size| size.as_u64().expect("a size")))
            .collect()
    }

    /// Whether each text fits its expression whole (RE2's `FullMatch`, in
    /// Latin-1, as Envoy matches), in order; an expression RE2 refuses is
    /// its message.
    pub fn full_match_all(cases: &[(String, Vec<u8>)]) -> Vec<Result<bool, String>> {
        let questions: Vec<serde_json::Value> = cases
            .iter()
            .map(|(regex, text)| {
                let latin1: String = text.iter().map(|&byte| char::from(byte)).collect();
                serde_json::json!([regex, latin1])
            })
            .collect();
        Self::ask_all(&questions)
            .into_iter()
            .map(|answer| Self::read(&answer, "matched").map(|matched| matched.as_bool().expect("a bool")))
            .collect()
    }

    /// One RE2 answering every question, in order: written from a thread
    /// while the answers are read, so neither pipe fills up.
    fn ask_all(questions: &[serde_json::Value]) -> Vec<serde_json::Value> {
        let mut re2 = Self::start();
        let mut stdin = re2.stdin.take().expect("RE2's input is open");
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let mut out = std::io::BufWriter::new(&mut stdin);
                for question in questions {
                    let mut line = serde_json::to_vec(question).expect("JSON encodes");
                    line.push(b'\n');
                    if out.write_all(&line).is_err() {
                        // The reader reports what became of RE2.
                        return;
                    }
                }
                let _ = out.flush();
            });
            questions.iter().map(|_| re2.answer_line()).collect()
        })
    }

    /// The `key` of an answer, or RE2's error.
    fn read(answer: &serde_json::Value, key: &str) -> Result<serde_json::Value, String> {
        match (answer.get(key), answer["error"].as_str()) {
            (Some(value), _) => Ok(value.clone()),
            (None, Some(error)) => Err(error.to_owned()),
            (None, None) => panic!("RE2 answered {answer}"),
        }
    }

    fn answer(&mut self) -> Compiled {
        let answer = self.answer_line();
        Self::read(&answer, "size").map(|size| size.as_u64().expect("a size"))
    }

    fn answer_line(&mut self) -> serde_json::Value {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => panic!("{}", self.failed("it stopped answering")),
            Ok(_) => {}
            Err(error) => panic!("{}", self.failed(&error.to_string())),
        }
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("RE2 answered {line:?}: {error}"))
    }

    fn failed(&mut self, what: &str) -> String {
        let status = self.child.try_wait().ok().flatten();
        format!(
            "RE2 in Python failed ({what}; exit {status:?}): is google-re2 installed? run `cargo xtask pyenv` (its \
             error is above)"
        )
    }
}

impl Drop for Re2 {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
