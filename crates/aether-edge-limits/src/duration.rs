//! Durations in Gateway API's form (GEP-2257), the one reader of them:
//! one to four pairs of a number (one to five digits) and a unit, `h`,
//! `m`, `s` or `ms`, added together: `15s`, `1m30s`, `500ms`, `1h0m0s`.
//! The API's pattern admits exactly these (`^([0-9]{1,5}(h|m|s|ms)){1,4}$`);
//! units may come in any order and repeat, as that pattern allows.

use std::fmt;
use std::time::Duration;

/// A string that is not a Gateway API duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    /// The string read.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a duration such as 15s, 1m30s or 500ms: {}",
            self.input, self.reason
        )
    }
}

impl std::error::Error for DurationError {}

/// Reads a Gateway API duration.
///
/// ```
/// use std::time::Duration;
/// use aether_edge_limits::parse_gateway_duration;
///
/// assert_eq!(parse_gateway_duration("1m30s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_gateway_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert!(parse_gateway_duration("1.5s").is_err());
/// ```
pub fn parse_gateway_duration(input: &str) -> Result<Duration, DurationError> {
    let error = |reason| DurationError {
        input: input.to_owned(),
        reason,
    };
    let mut rest = input.as_bytes();
    if rest.is_empty() {
        return Err(error("it is empty"));
    }
    let mut total = Duration::ZERO;
    let mut pairs = 0;
    while !rest.is_empty() {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return Err(error("each unit must follow a number"));
        }
        if digits > 5 {
            return Err(error("a number has at most 5 digits"));
        }
        // Five ASCII digits always fit.
        let number: u64 = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|digits| digits.parse().ok())
            .ok_or_else(|| error("a number has at most 5 digits"))?;
        rest = &rest[digits..];
        let (unit, length) = match rest {
            [b'm', b's', ..] => (Duration::from_millis(1), 2),
            [b'h', ..] => (Duration::from_secs(3600), 1),
            [b'm', ..] => (Duration::from_secs(60), 1),
            [b's', ..] => (Duration::from_secs(1), 1),
            _ => return Err(error("each number must be followed by a unit: h, m, s or ms")),
        };
        rest = &rest[length..];
        pairs += 1;
        if pairs > 4 {
            return Err(error("it has at most 4 number-unit pairs"));
        }
        // At most 4 × 99999 h: far from overflowing.
        total += unit * u32::try_from(number).map_err(|_| error("a number has at most 5 digits"))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_unit_and_their_sums() {
        for (input, expected) in [
            ("0s", Duration::ZERO),
            ("0h", Duration::ZERO),
            ("15s", Duration::from_secs(15)),
            ("1m30s", Duration::from_secs(90)),
            ("500ms", Duration::from_millis(500)),
            ("1h", Duration::from_secs(3600)),
            ("1h2m3s4ms", Duration::from_millis(3_723_004)),
            ("10s500ms", Duration::from_millis(10_500)),
            // Any order, units repeated: the API's pattern allows it.
            ("1s1s", Duration::from_secs(2)),
            ("1ms1h", Duration::from_millis(3_600_001)),
            ("99999h99999h99999h99999h", Duration::from_secs(4 * 99_999 * 3600)),
        ] {
            assert_eq!(parse_gateway_duration(input), Ok(expected), "{input}");
        }
    }

    #[test]
    fn refuses_what_the_pattern_refuses() {
        for input in [
            "",
            "s",
            "1",
            "1.5s",
            "-1s",
            "+1s",
            "1S",
            "1 s",
            " 1s",
            "1s ",
            "1d",
            "1us",
            "1ns",
            "100000s",
            "1h1m1s1ms1s",
            "1m1",
            "ms",
            "1sm",
            "１s",
        ] {
            assert!(parse_gateway_duration(input).is_err(), "{input:?}");
        }
        assert_eq!(
            parse_gateway_duration("1.5s").unwrap_err().to_string(),
            "\"1.5s\" is not a duration such as 15s, 1m30s or 500ms: each number must be followed by a unit: h, m, s or ms"
        );
    }
}
