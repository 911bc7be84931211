//! Durations as written in machine files: `500ms`, `30s`, `5m`, `72h`, `7d`.

use std::fmt;

/// A whole number of milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    pub millis: u64,
}

const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

impl Duration {
    pub fn from_millis(millis: u64) -> Duration {
        Duration { millis }
    }

    /// Parses `500ms`, `30s`, `5m`, `72h` or `7d`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Duration> {
        let digits = text.find(|c: char| !c.is_ascii_digit())?;
        let (number, unit) = text.split_at(digits);
        if number.is_empty() {
            return None;
        }
        let scale = UNITS.iter().find(|(u, _)| *u == unit)?.1;
        let millis = number.parse::<u64>().ok()?.checked_mul(scale)?;
        Some(Duration { millis })
    }
}

/// Writes the largest unit that divides the duration exactly.
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (unit, scale) = UNITS
            .iter()
            .find(|(_, scale)| self.millis.is_multiple_of(*scale) && self.millis != 0)
            .copied()
            .unwrap_or(("ms", 1));
        write!(f, "{}{}", self.millis / scale, unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!(Duration::parse("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(Duration::parse("72h").unwrap().to_string(), "3d");
        assert_eq!(Duration::parse("90m").unwrap().to_string(), "90m");
        assert_eq!(Duration::parse("0s").unwrap().to_string(), "0ms");
        for bad in [
            "",
            "5",
            "ms",
            "5 s",
            "5w",
            "-5s",
            "1.5s",
            "99999999999999999999d",
        ] {
            assert_eq!(Duration::parse(bad), None, "{bad}");
        }
    }
}
