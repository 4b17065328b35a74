//! `aetherctl`: VirtualHost manifests on local files, without a cluster.
//!
//! The binary is a thin shell around [`run`], which parses the arguments,
//! runs the command, writes to the given writers and returns the exit code,
//! so that everything but the process itself is testable in-process.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

pub mod admit;
pub mod convert;
pub mod diff;
pub mod explain;
pub mod input;
pub mod project;
pub mod report;
pub mod status;
pub mod summary;

use aether_manifests::{Limits, OtherKinds, Reading};
use report::{CommandReport, Report};

/// Every object is valid (or `crd` printed the CRD, or `--help`).
pub const EXIT_VALID: u8 = 0;
/// Every file was read, and at least one object breaks a validation rule.
pub const EXIT_INVALID: u8 = 1;
/// A usage, I/O or parse error: some input could not be checked at all.
pub const EXIT_ERROR: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "aetherctl",
    version,
    about = "VirtualHost (config.aether.io/v1) manifests, checked without a cluster."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the manifests are: `-f FILE`s and PATHs, as kubectl takes them.
#[derive(Debug, Args)]
struct Inputs {
    /// A manifest file or directory, or `-` for standard input (read once);
    /// repeatable, as kubectl's. Read before the PATHs, in the order given.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    filenames: Vec<PathBuf>,
    /// Manifest files or directories (`-`: standard input).
    #[arg(value_name = "PATH", required_unless_present = "filenames")]
    paths: Vec<PathBuf>,
}

impl Inputs {
    /// Every input, `-f` ones first.
    fn all(self) -> Vec<PathBuf> {
        let mut all = self.filenames;
        all.extend(self.paths);
        all
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check VirtualHost manifests against the API's validation rules and
    /// the edge's own limits.
    ///
    /// Each PATH (or -f FILE) is a file, or a directory searched recursively
    /// for *.yaml, *.yml and *.json files (symbolic links to directories are
    /// not followed), or `-` for standard input (JSON when it starts with
    /// `{`, else YAML). Only regular files (or links to them) are read: a
    /// FIFO, socket or device is refused, never waited on. A file holds one
    /// or more YAML documents separated by `---`, or JSON values; a `kind:
    /// List` document's items are checked one by one. Documents are numbered
    /// from 0 in each file, List items counted one by one. An object without
    /// `metadata.namespace` is in `default`. Documents of other kinds (a
    /// Deployment, a ConfigMap: `kustomize build | aetherctl validate -f -`)
    /// are skipped with a note on stderr.
    ///
    /// Each object is judged as the webhook judges it on its own: by the
    /// API's rules, then, once it passes them, by the edge's own limits (a
    /// regular expression its RE2 refuses, a route action Envoy refuses).
    /// Only host conflicts, between objects, are left to `admit` and
    /// `project`.
    ///
    /// Everything is reported, errors and violations alike: one bad file
    /// does not hide the others.
    #[command(after_long_help = validate_help(), after_help = "Exit codes, limits and the JSON shape: see --help.")]
    Validate {
        /// How to report: `text` (violations on stdout, errors and notes on
        /// stderr), `json` or `yaml` (one document on stdout, errors
        /// included).
        #[arg(long, short, value_enum, default_value_t = Output::Text)]
        output: Output,
        /// Read as the webhook does: a field this build does not know
        /// (written against a newer API version) is ignored rather than a
        /// violation; an enum value it does not know is still one, of rule
        /// `unsupported`. (The edge also leaves out an object with an
        /// unknown spec field: `project` and `status` show it.) Without it,
        /// both are violations, as `kubectl --validate=strict` reports them.
        #[arg(long)]
        tolerant: bool,
        #[command(flatten)]
        inputs: Inputs,
    },
    /// Project VirtualHost manifests to the edge's configuration, as the
    /// controller would: the Envoy RouteConfiguration, the backend services,
    /// the TLS secrets, and a report of host conflicts and left-out objects.
    ///
    /// PATHs are read as for `validate --tolerant`, as the controller reads
    /// them (a spec field or an enum value from a newer API version leaves
    /// its object out as unsupported). Invalid objects and the losers of
    /// host conflicts do not fail the command: they are in the snapshot's
    /// report. Exit 0 when the snapshot is printed; 2 when any input could
    /// not be read, or holds two copies of one object (nothing is printed
    /// then: a snapshot missing an object would look complete).
    Project {
        /// `yaml` or `json`: the whole snapshot, the route configuration in
        /// Envoy's canonical proto3 JSON form; `text`: a summary, one line
        /// per host, route, conflict and object left out.
        #[arg(long, short, value_enum, default_value_t = Output::Yaml)]
        output: Output,
        /// The former name of --output (deprecated: `-f` is now a file, as
        /// in kubectl).
        #[arg(long, value_enum, hide = true, conflicts_with = "output")]
        format: Option<Output>,
        #[command(flatten)]
        inputs: Inputs,
    },
    /// Explain which object and route of the edge serve a request, why the
    /// routes before it did not, and what the edge does with it.
    ///
    /// REQUEST is `[METHOD] URL`: `GET https://api.example.com/users/7?x=1`
    /// (the method defaults to GET). The manifests (-f, read as for
    /// `project`) are projected as the controller projects them, and the
    /// edge's configuration is then read as Envoy reads it: over https, the
    /// filter chain the host selects; the virtual host of the `Host` (the
    /// URL's, or a `-H 'host: ...'`), and who else claims that host and why
    /// they lost; the routes in the order tried, each with the first
    /// matcher that failed (path, method, header, query); and the result:
    /// the cluster or weighted split, the path and Host after rewrite, the
    /// request and response header changes, timeout and retries; or the
    /// redirect's Location; or the edge's own answer (404, 421, 500 for a
    /// split of weight 0, 400 for a header name with `_`).
    ///
    /// Exit 0 when a route serves the request, 1 when none does (no host,
    /// no route, a misdirected request, a refused handshake), 2 when the
    /// input cannot be read or the answer cannot be predicted (it says why).
    Explain {
        /// A manifest file or directory, or `-` for standard input;
        /// repeatable.
        #[arg(short = 'f', long = "filename", value_name = "FILE", required = true)]
        filenames: Vec<PathBuf>,
        /// A request header, `name: value`; repeatable.
        #[arg(short = 'H', long = "header", value_name = "HEADER")]
        headers: Vec<String>,
        /// `text`, or `json` / `yaml`: {"request", "routedPath", "tls",
        /// "host": {"host", "servedBy", "domain", "claims"}, "routes":
        /// [{"index", "path", "result"}], "outcome": {"kind", ...}, "notes"}.
        #[arg(long, short, value_enum, default_value_t = Output::Text)]
        output: Output,
        /// `[METHOD] URL`.
        #[arg(value_name = "REQUEST", required = true, num_args = 1..=2)]
        request: Vec<String>,
    },
    /// Show what a change of manifests moves at the edge: per host, its
    /// owner before and after, the routes added, removed, changed or
    /// reordered, and requests (read off the routes' own matchers) whose
    /// outcome changes, with the old and the new outcome.
    ///
    /// `-f OLD -f NEW` (files or directories), or `--against REV -f NEW...`
    /// (the old manifests are the NEW paths as committed at git revision
    /// REV, read from the repository of the current directory). Both sides
    /// are read and projected as for `project`; outcomes are those of
    /// `explain`.
    ///
    /// Exit 0 when nothing the edge serves changes, 1 when something does,
    /// 2 when an input cannot be read, as `diff` does.
    Diff {
        /// OLD then NEW; with --against, the NEW paths only (repeatable).
        #[arg(short = 'f', long = "filename", value_name = "FILE", required = true)]
        filenames: Vec<PathBuf>,
        /// Read OLD from this git revision (`HEAD`, `main~1`, a commit;
        /// one starting with `-` is refused, never handed to git).
        #[arg(long, value_name = "REV")]
        against: Option<String>,
        /// `text`, or `json` / `yaml`: [{"host", "oldOwner", "newOwner",
        /// "routes": [{"change", "index", "path", ...}], "witnesses":
        /// [{"request", "old", "new"}]}].
        #[arg(long, short, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Run the admission webhook's checks offline: would the API server,
    /// with aether-webhook installed, admit these VirtualHosts?
    ///
    /// Each object under PATH, in file and document order, is sent to the
    /// webhook's own handler as the AdmissionReview the API server would
    /// send (CREATE, or UPDATE when an object of that namespace/name is
    /// stored), against the hosts of the objects under --stored. An admitted
    /// object is stored before the next is reviewed, as when manifests are
    /// applied one by one; so two new objects claiming one host: the second
    /// is denied. Denials name the rule broken or the host's owner; wildcard
    /// overlaps are warnings.
    ///
    /// Everything is read as the webhook reads it (as for `validate
    /// --tolerant`) and handed to the webhook as written: a field from a
    /// newer API version is admitted with a warning naming it; an enum value
    /// from one (or a field in place of one this build requires) is denied
    /// `Unsupported:`, naming it.
    ///
    /// Exit 0 when every object is admitted, 1 when some is denied, 2 when
    /// any input cannot be read (nothing is reviewed then: an incomplete
    /// stored set could admit what the cluster would deny).
    Admit {
        /// Objects already in the cluster (files or directories, read as
        /// for `validate`; `-`: standard input); repeatable. Without it,
        /// nothing is stored.
        #[arg(long, value_name = "PATH")]
        stored: Vec<PathBuf>,
        /// `text`, or `json` (or `yaml`, the same document): {"admitted",
        /// "reviews": [{"file", "document", "namespace", "name",
        /// "operation", "allowed", "message", "warnings"}], "errors",
        /// "skipped"}.
        #[arg(long, short, value_enum, default_value_t = Output::Text)]
        output: Output,
        #[command(flatten)]
        inputs: Inputs,
    },
    /// Compute the status the controller would write for each VirtualHost.
    ///
    /// PATHs are read as for `validate --tolerant` (a `status` in a manifest, as
    /// `kubectl get -o yaml` writes it, is the stored status), projected as
    /// by `project`, and each object's status computed by the controller's
    /// own code: the `Accepted` condition (True/Accepted, True/HostConflict
    /// when some hosts went to older objects, False/HostConflict when all
    /// did, False/Invalid listing the broken rules, False/Unsupported naming
    /// the values from a newer API version) and `routeCount`.
    ///
    /// Exit 0 when every object is fully served (Accepted True, reason
    /// Accepted), 1 when some is not, 2 when any input cannot be read
    /// (nothing is computed then).
    Status {
        /// `text`, or `json` (or `yaml`, the same document): {"served",
        /// "objects": [{"file", "document", "namespace", "name", "status",
        /// "wouldPatch"}], "errors", "skipped"}.
        #[arg(long, short, value_enum, default_value_t = Output::Text)]
        output: Output,
        #[command(flatten)]
        inputs: Inputs,
    },
    /// Convert VirtualHost manifests to Gateway API HTTPRoutes
    /// (gateway.networking.k8s.io/v1), one per VirtualHost (several when it
    /// has more routes than one HTTPRoute holds), named and namespaced as it.
    ///
    /// PATHs are read strictly, as for `validate` (a field this build does
    /// not know would be lost); invalid objects are not converted. What does
    /// not carry over exactly is noted on stderr, one line each: `differs`
    /// (written, but Gateway API gives it another meaning: a character-wise
    /// path prefix, list order where precedence reorders two routes a
    /// request can both match), `dropped` (HTTPRoute cannot say it: an
    /// inverted header match, TLS, which is the Gateway's), `needs` (the
    /// HTTPRoute needs what the VirtualHost does not say: a parent Gateway,
    /// a backend port).
    ///
    /// Exit 0 when every object was converted (with notes or not), 1 when
    /// some object is invalid, 2 when any input cannot be read (nothing is
    /// written then).
    Convert {
        /// What to convert to.
        #[arg(long, value_enum)]
        to: ConvertTarget,
        /// The Gateway the HTTPRoutes attach to (parentRefs):
        /// `[NAMESPACE/]NAME[:SECTION]`.
        #[arg(long, value_name = "GATEWAY", value_parser = convert::parse_gateway)]
        gateway: Option<aether_gateway_api::Gateway>,
        /// `yaml` (or `text`, the same: a stream of HTTPRoutes) or `json`
        /// (a `List`).
        #[arg(long, short, value_enum, default_value_t = Output::Yaml)]
        output: Output,
        #[command(flatten)]
        inputs: Inputs,
    },
    /// Print the VirtualHost CustomResourceDefinition, for `kubectl apply -f -`.
    Crd {
        /// `yaml` (or `text`, the same) or `json`.
        #[arg(long, short, value_enum, default_value_t = Output::Yaml)]
        output: Output,
    },
    /// Print a shell completion script: `source <(aetherctl completion bash)`.
    ///
    /// bash: `aetherctl completion bash > /etc/bash_completion.d/aetherctl`;
    /// zsh: `aetherctl completion zsh > "${fpath[1]}/_aetherctl"`; fish:
    /// `aetherctl completion fish > ~/.config/fish/completions/aetherctl.fish`.
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// What `convert` converts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConvertTarget {
    /// Gateway API HTTPRoutes.
    GatewayApi,
}

/// How a command writes what it found: `-o`/`--output`, as kubectl's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// For people.
    Text,
    /// For programs: the shape documented in [`report::Report`] (and
    /// `AdmitReport`, `StatusReport`); `project`: the whole snapshot.
    Json,
    /// The JSON document, as YAML.
    Yaml,
}

fn validate_help() -> String {
    let limits = Limits::default();
    format!(
        "Exit codes:
  0  every object is valid
  1  some object breaks a validation rule (each violation is listed with its
     file, document index, namespace/name, field path, rule id and message).
     A value of the wrong type is a violation too, worded from the CRD's
     schema as the API server would reject it: `spec.routes[0].backend.port:
     must be an integer from 0 to 65535, got -1 [type]` (rules `type`,
     `enum`, `unknown_field`, `required`, `decode`). So is a limit of the
     edge's own, checked once the object passes the rules, as the webhook
     checks it: a regular expression the edge's RE2 refuses (rule `{re2}`),
     a route action Envoy refuses (rule `{envoy}`)
  2  a usage, I/O or parse error: a path that cannot be read, a file that is
     not YAML/JSON or breaks a limit, a document that is not a Kubernetes
     object (not a mapping, no apiVersion or kind), a VirtualHost that cannot
     be read (another apiVersion of config.aether.io, no metadata.name),
     with the file, document index and path. Other kinds (a Deployment, a
     ConfigMap) are skipped, each with a `skipped:` note on stderr. When
     there are both errors and violations, all are reported and the exit
     code is 2. Every object is
     checked on its own, two copies of one included (`project`, `status`
     and `admit`, which take the objects as a set, refuse a second copy).

Limits (input is untrusted; breaking one is an error naming it, exit 2):
  file size             {} bytes (a file of exactly this size is read)
  documents per file    {}
  nesting depth         {} levels of mappings and sequences
  nodes per file        {} (YAML or JSON, counted before any is built)
  YAML aliases per file {}
  alias expansion       {} nodes added by aliases, per file
  Files must be UTF-8 regular files. A file modified less than {} ms ago
  may still be being written: it is read once left alone that long (waiting
  {} ms at most, then an error). Standard input (`-`) has the same limits.

JSON output (--output json):
  {{\"valid\": bool,
   \"objects\": [{{\"file\", \"document\", \"namespace\", \"name\",
                \"violations\": [{{\"path\", \"rule\", \"message\"}}]}}],
   \"errors\": [{{\"file\", \"document\": number|null, \"path\": string|null, \"message\"}}],
   \"skipped\": [{{\"file\", \"document\", \"apiVersion\", \"kind\", \"name\": string|null}}]}}
  (--output yaml: the same document as YAML)",
        limits.max_file_bytes,
        limits.max_documents,
        limits.max_depth,
        limits.max_nodes,
        limits.max_aliases,
        limits.max_alias_expansion,
        limits.settle.as_millis(),
        limits.max_settle_wait.as_millis(),
        re2 = aether_edge_limits::RULE_RE2,
        envoy = aether_edge_limits::RULE_ENVOY,
    )
}

/// Runs `aetherctl` with `args` (the program name first), writing its output
/// to `out` and its errors to `err`, and returns the exit code.
pub fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` come this way too, for stdout and exit 0.
            // Plain text: StyledStr's Display drops the colours.
            let written = if e.use_stderr() {
                write!(err, "{}", e.render()).map(|()| EXIT_ERROR)
            } else {
                write!(out, "{}", e.render()).map(|()| EXIT_VALID)
            };
            return written.unwrap_or(EXIT_ERROR);
        }
    };
    // What a person wrote is linted strictly; what the edge would do is
    // shown as the controller reads it. Every command reads mixed streams
    // (`kustomize build`): other kinds are skipped with a note.
    let strict = Limits {
        other_kinds: OtherKinds::Skip,
        ..Limits::default()
    };
    let tolerant = Limits {
        reading: Reading::Tolerant,
        ..strict
    };
    if let Some(message) = stdin_twice(&cli.command) {
        return writeln!(err, "error: {message}").map_or(EXIT_ERROR, |()| EXIT_ERROR);
    }
    let result = match cli.command {
        Command::Validate {
            output,
            tolerant: lenient,
            inputs,
        } => Report::check(&inputs.all(), if lenient { &tolerant } else { &strict }).emit(output, out, err),
        Command::Project { output, format, inputs } => {
            project::run(&inputs.all(), format.unwrap_or(output), &tolerant, out, err)
        }
        Command::Admit { stored, output, inputs } => {
            admit::check(&stored, &inputs.all(), &strict).emit(output, out, err)
        }
        Command::Status { output, inputs } => {
            status::check(&inputs.all(), &tolerant, jiff::Timestamp::now()).emit(output, out, err)
        }
        Command::Convert {
            to: ConvertTarget::GatewayApi,
            gateway,
            output,
            inputs,
        } => convert::run(&inputs.all(), gateway.as_ref(), output, &strict, out, err),
        Command::Explain {
            filenames,
            headers,
            output,
            request,
        } => explain::run(&filenames, &request, &headers, output, &tolerant, out, err),
        Command::Diff {
            mut filenames,
            against,
            output,
        } => {
            let old = match against {
                Some(revision) => Some(diff::Old::Revision(revision)),
                None if filenames.len() == 2 => Some(diff::Old::Paths(vec![filenames.remove(0)])),
                None => None,
            };
            match old {
                Some(old) => diff::run(old, &filenames, output, &tolerant, out, err),
                None => {
                    writeln!(err, "error: diff takes `-f OLD -f NEW`, or `--against REV -f NEW`").map(|()| EXIT_ERROR)
                }
            }
        }
        Command::Crd { output } => crd(output, out),
        Command::Completion { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "aetherctl", out);
            Ok(EXIT_VALID)
        }
    };
    // A closed stdout (`aetherctl ... | head`) is not worth a panic.
    result.unwrap_or(EXIT_ERROR)
}

/// A usage error when standard input (`-`) is among a command's inputs
/// more than once: it can be read only once.
fn stdin_twice(command: &Command) -> Option<String> {
    let paths: Vec<&PathBuf> = match command {
        Command::Validate { inputs, .. }
        | Command::Project { inputs, .. }
        | Command::Status { inputs, .. }
        | Command::Convert { inputs, .. } => inputs.filenames.iter().chain(&inputs.paths).collect(),
        Command::Admit { stored, inputs, .. } => stored.iter().chain(&inputs.filenames).chain(&inputs.paths).collect(),
        Command::Explain { filenames, .. } | Command::Diff { filenames, .. } => filenames.iter().collect(),
        Command::Crd { .. } | Command::Completion { .. } => Vec::new(),
    };
    input::stdin_given_twice(paths)
        .then(|| "standard input (`-`) is given more than once: it can be read only once".to_owned())
}

/// The CRD in `output` form: YAML as generated (`text` too), or JSON.
fn crd(output: Output, out: &mut dyn Write) -> std::io::Result<u8> {
    match output {
        Output::Text | Output::Yaml => out.write_all(aether_api::CRD_YAML.as_bytes())?,
        Output::Json => {
            let crd: serde_json::Value = serde_saphyr::from_str(aether_api::CRD_YAML).map_err(std::io::Error::other)?;
            serde_json::to_writer_pretty(&mut *out, &crd)?;
            writeln!(out)?;
        }
    }
    Ok(EXIT_VALID)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_in_process(args: &[&str]) -> (u8, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(args, &mut out, &mut err);
        (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    }

    #[test]
    fn errors_win_over_violations_in_the_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let example = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/proposal.yaml"));
        let invalid = dir.path().join("invalid.yaml");
        std::fs::write(&invalid, example.unwrap().replace("svc-users", "Svc_Users")).unwrap();
        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "{").unwrap();
        let (invalid, broken) = (invalid.to_str().unwrap(), broken.to_str().unwrap());

        let (code, out, err) = run_in_process(&["aetherctl", "validate", invalid]);
        assert_eq!((code, err.as_str()), (EXIT_INVALID, ""));
        assert!(out.contains("spec.routes[0].backend.service: "), "{out}");
        let (code, out, err) = run_in_process(&["aetherctl", "validate", invalid, broken]);
        assert_eq!(code, EXIT_ERROR);
        assert!(out.contains("spec.routes[0].backend.service: "), "{out}");
        assert!(err.starts_with(&format!("error: {broken}: invalid JSON: ")), "{err}");
    }

    #[test]
    fn help_goes_to_stdout_and_exits_0() {
        let (code, out, err) = run_in_process(&["aetherctl", "--help"]);
        assert_eq!((code, err.as_str()), (EXIT_VALID, ""));
        assert!(out.contains("validate"), "{out}");
    }
}
