//! The compiler's version, for the `rustc` label of `build_info`.

fn main() {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map(|text| text.trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=AETHER_RUNTIME_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
