//! The well-known string formats (`hostname`, `ip`, `uri`, ...) as
//! formulas of regular expressions, written once: the validator matches
//! them with the `regex` crate, the CRD writes them as `pattern`s under
//! `allOf`/`anyOf`, and the API server reads them with RE2.
//!
//! Each follows what protovalidate accepts (checked case by case against
//! protovalidate 2.1.0 by the rule-kinds test API):
//!
//! - hostname: RFC 1123 labels of 1 to 63 letters, digits and inner
//!   hyphens, dot-separated, an optional trailing dot, at most 253
//!   characters without it, the last label not all digits;
//! - IPv4: four decimal octets, no leading zeros; IPv6: RFC 4291's text
//!   forms (`::`, an embedded IPv4), with an optional zone (`%` and any
//!   characters but NUL, which protovalidate refuses there);
//! - URI and URI reference: RFC 3986, with RFC 6874 zones in IPv6 literals
//!   (`%25` and unreserved or percent-encoded characters); the
//!   percent-encoded bytes of a host name or zone must be UTF-8;
//! - host and port: a hostname, an IPv4 address or a bracketed IPv6
//!   address, a colon, and a port from 0 to 65535 without leading zeros.
//!
//! No format uses look-around, Perl classes or flags (see [`super::pattern`]).

use super::pattern::Pattern;
use super::standard::Format;

/// A value's test: patterns combined with and / or.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    Pattern(Pattern),
    All(Vec<Check>),
    Any(Vec<Check>),
}

const HEX: &str = "[0-9A-Fa-f]";
const DEC_OCTET: &str = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])";
const LABEL: &str = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
/// The last label of a hostname holds a non-digit.
const LAST_LABEL: &str = "(^|\\.)[0-9]*[A-Za-z-][A-Za-z0-9-]*\\.?";
/// At most 253 characters, and a trailing dot.
const HOST_LENGTH: &str = "^(.{1,253}|.{1,253}\\.)";
/// 0 to 65535, no leading zero.
const PORT: &str = "(0|[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])";
/// An IP address's zone: `%` and any characters but NUL (protovalidate
/// refuses a NUL in a zone, and takes any other character, newlines too).
const ZONE: &str = "(%[^\\x00]+)?";
/// Characters a URI allows unencoded: unreserved (with `-`, which each
/// class ends with, lest it read as a range) and sub-delims.
const UNRESERVED: &str = "A-Za-z0-9._~";
const SUB_DELIMS: &str = "!$&'()*+,;=";

fn ipv4() -> String {
    format!("{DEC_OCTET}(\\.{DEC_OCTET}){{3}}")
}

/// RFC 3986's `IPv6address`.
fn ipv6() -> String {
    let h = format!("{HEX}{{1,4}}");
    let ls32 = format!("({h}:{h}|{})", ipv4());
    let forms = [
        format!("({h}:){{6}}{ls32}"),
        format!("::({h}:){{5}}{ls32}"),
        format!("({h})?::({h}:){{4}}{ls32}"),
        format!("(({h}:){{0,1}}{h})?::({h}:){{3}}{ls32}"),
        format!("(({h}:){{0,2}}{h})?::({h}:){{2}}{ls32}"),
        format!("(({h}:){{0,3}}{h})?::{h}:{ls32}"),
        format!("(({h}:){{0,4}}{h})?::{ls32}"),
        format!("(({h}:){{0,5}}{h})?::{h}"),
        format!("(({h}:){{0,6}}{h})?::"),
    ];
    format!("({})", forms.join("|"))
}

/// A run of percent-encoded bytes that is UTF-8 (RFC 3629's table).
fn utf8_percent_encoded() -> String {
    let byte = |first: &str, second: &str| format!("%{first}{second}");
    let cont = byte("[89ABab]", HEX);
    let sequences = [
        byte("[0-7]", HEX),
        format!("{}{cont}", byte("[Cc]", "[2-9A-Fa-f]")),
        format!("{}{cont}", byte("[Dd]", HEX)),
        format!("{}{}{cont}", byte("[Ee]", "0"), byte("[ABab]", HEX)),
        format!("{}{cont}{cont}", byte("[Ee]", "[1-9A-Ca-cEFef]")),
        format!("{}{}{cont}", byte("[Ee]", "[Dd]"), byte("[89]", HEX)),
        format!("{}{}{cont}{cont}", byte("[Ff]", "0"), byte("[9ABab]", HEX)),
        format!("{}{cont}{cont}{cont}", byte("[Ff]", "[1-3]")),
        format!("{}{}{cont}{cont}", byte("[Ff]", "4"), byte("8", HEX)),
    ];
    format!("({})", sequences.join("|"))
}

/// RFC 3986's URI (`relative` false) or relative reference (true), whole.
fn uri(relative: bool) -> String {
    let pct = format!("%{HEX}{{2}}");
    let pchar = format!("([{UNRESERVED}{SUB_DELIMS}:@-]|{pct})");
    let utf8 = utf8_percent_encoded();
    let userinfo = format!("([{UNRESERVED}{SUB_DELIMS}:-]|{pct})*");
    let reg_name = format!("([{UNRESERVED}{SUB_DELIMS}-]|{utf8})*");
    let zone = format!("(%25([{UNRESERVED}-]|{utf8})+)?");
    let future = format!("[Vv]{HEX}+\\.[{UNRESERVED}{SUB_DELIMS}:-]+");
    let host = format!("(\\[({}{zone}|{future})\\]|{reg_name})", ipv6());
    let authority = format!("({userinfo}@)?{host}(:[0-9]*)?");
    let abempty = format!("(/{pchar}*)*");
    let absolute = format!("/({pchar}+(/{pchar}*)*)?");
    let rootless_or_noscheme = if relative {
        // The first segment has no colon, lest it read as a scheme.
        format!("([{UNRESERVED}{SUB_DELIMS}@-]|{pct})+(/{pchar}*)*")
    } else {
        format!("{pchar}+(/{pchar}*)*")
    };
    let part = format!("(//{authority}{abempty}|{absolute}|{rootless_or_noscheme}|)");
    let rest = format!("(\\?({pchar}|[/?])*)?(#({pchar}|[/?])*)?");
    if relative {
        format!("^{part}{rest}$")
    } else {
        format!("^[A-Za-z][A-Za-z0-9+.-]*:{part}{rest}$")
    }
}

fn pattern(source: String) -> Check {
    Check::Pattern(Pattern::new(&source).unwrap_or_else(|err| panic!("a format's pattern: {err:#}")))
}

fn hostname() -> Check {
    Check::All(vec![
        pattern(format!("^{LABEL}(\\.{LABEL})*\\.?$")),
        pattern(format!("{LAST_LABEL}$")),
        pattern(format!("{HOST_LENGTH}$")),
    ])
}

fn ip(v4: bool, v6: bool) -> Check {
    let mut any = Vec::new();
    if v4 {
        any.push(pattern(format!("^{}$", ipv4())));
    }
    if v6 {
        any.push(pattern(format!("^{}{ZONE}$", ipv6())));
    }
    if any.len() == 1 { any.remove(0) } else { Check::Any(any) }
}

impl Format {
    /// The test a non-empty value must pass (an empty one breaks the
    /// `_empty` rule instead, where the format has one).
    pub fn check(self) -> Check {
        match self {
            Format::Hostname => hostname(),
            Format::Ipv4 => ip(true, false),
            Format::Ipv6 => ip(false, true),
            Format::Ip => ip(true, true),
            Format::Address => Check::Any(vec![hostname(), ip(true, true)]),
            Format::Uri => Check::Any(vec![pattern(uri(false))]),
            Format::UriRef => Check::Any(vec![pattern(uri(false)), pattern(uri(true))]),
            Format::HostAndPort => Check::Any(vec![
                Check::All(vec![
                    pattern(format!("^{LABEL}(\\.{LABEL})*\\.?:{PORT}$")),
                    pattern(format!("{LAST_LABEL}:{PORT}$")),
                    pattern(format!("{HOST_LENGTH}:{PORT}$")),
                ]),
                pattern(format!("^{}:{PORT}$", ipv4())),
                pattern(format!("^\\[{}{ZONE}\\]:{PORT}$", ipv6())),
            ]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(check: &Check, value: &str) -> bool {
        match check {
            Check::Pattern(p) => regex::Regex::new(&p.source).unwrap().is_match(value),
            Check::All(all) => all.iter().all(|c| passes(c, value)),
            Check::Any(any) => any.iter().any(|c| passes(c, value)),
        }
    }

    #[test]
    fn every_format_compiles_and_refuses_the_empty_string_but_uri_ref() {
        for format in [
            Format::Hostname,
            Format::Ip,
            Format::Ipv4,
            Format::Ipv6,
            Format::Uri,
            Format::UriRef,
            Format::Address,
            Format::HostAndPort,
        ] {
            assert_eq!(passes(&format.check(), ""), format == Format::UriRef, "{format:?}");
        }
    }

    #[test]
    fn formats_at_their_edges() {
        let cases: [(Format, &str, bool); 22] = [
            (Format::Hostname, "a.b.", true),
            (Format::Hostname, "a.1", false),
            (Format::Hostname, "1-1", true),
            (Format::Ipv4, "01.2.3.4", false),
            (Format::Ipv4, "255.255.255.255", true),
            (Format::Ipv6, "1:2:3:4:5:6:7::", true),
            (Format::Ipv6, "1:2:3:4:5::6:7:8", false),
            (Format::Ipv6, "fe80::1%e%", true),
            (Format::Ipv6, "fe80::1%\n", true),
            (Format::Ipv6, "fe80::1%a\0", false),
            (Format::Ip, "::ffff:1.2.3.4", true),
            (Format::Uri, "http://%c3%a9/", true),
            (Format::Uri, "http://%ff/", false),
            (Format::Uri, "http://[::1%25eth0]/", true),
            (Format::Uri, "http://[::1%eth0]/", false),
            (Format::Uri, "a:", true),
            (Format::UriRef, "1a:b", false),
            (Format::UriRef, "./foo/bar?query", true),
            (Format::Address, "123", false),
            (Format::HostAndPort, "a.b:080", false),
            (Format::HostAndPort, "[fe80::1%25eth0]:65535", true),
            (Format::HostAndPort, "[1.2.3.4]:80", false),
        ];
        for (format, value, valid) in cases {
            assert_eq!(passes(&format.check(), value), valid, "{format:?} {value:?}");
        }
    }
}
