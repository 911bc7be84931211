//! Durations as written in machine files: `500ms`, `30s`, `5m`, `72h`, `7d`.

use std::fmt;

/// A whole number of milliseconds, with the unit it was written in.
///
/// The unit is kept so that a machine file is printed as written (`72h`
/// stays `72h` rather than becoming `3d`); it is not part of the value, so
/// two durations of the same length are equal whatever their units.
#[derive(Clone, Copy, Debug)]
pub struct Duration {
    pub millis: u64,
    /// The unit of the text the duration was parsed from; `None` for one
    /// made from a number, which is printed in the largest exact unit.
    unit: Option<&'static str>,
}

impl PartialEq for Duration {
    fn eq(&self, other: &Duration) -> bool {
        self.millis == other.millis
    }
}

impl Eq for Duration {}

impl PartialOrd for Duration {
    fn partial_cmp(&self, other: &Duration) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Duration {
    fn cmp(&self, other: &Duration) -> std::cmp::Ordering {
        self.millis.cmp(&other.millis)
    }
}

impl std::hash::Hash for Duration {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.millis.hash(state);
    }
}

const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

impl Duration {
    pub const fn from_millis(millis: u64) -> Duration {
        Duration { millis, unit: None }
    }

    /// Parses `500ms`, `30s`, `5m`, `72h` or `7d`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Duration> {
        let digits = text.find(|c: char| !c.is_ascii_digit())?;
        let (number, unit) = text.split_at(digits);
        if number.is_empty() {
            return None;
        }
        let &(unit, scale) = UNITS.iter().find(|(u, _)| *u == unit)?;
        let millis = number.parse::<u64>().ok()?.checked_mul(scale)?;
        Some(Duration {
            millis,
            unit: Some(unit),
        })
    }
}

/// Writes the unit the duration was written in, else the largest unit that
/// divides it exactly.
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let written = UNITS.iter().find(|(unit, _)| Some(*unit) == self.unit);
        let (unit, scale) = written
            .or_else(|| {
                UNITS
                    .iter()
                    .find(|(_, scale)| self.millis.is_multiple_of(*scale) && self.millis != 0)
            })
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
        // Printed as written, and equal to the same length in another unit.
        assert_eq!(Duration::parse("72h").unwrap().to_string(), "72h");
        assert_eq!(Duration::parse("72h"), Duration::parse("3d"));
        assert_eq!(Duration::parse("90m").unwrap().to_string(), "90m");
        assert_eq!(Duration::parse("0s").unwrap().to_string(), "0s");
        // Made from a number: the largest unit that divides it exactly.
        assert_eq!(Duration::from_millis(259_200_000).to_string(), "3d");
        assert_eq!(Duration::from_millis(90_000).to_string(), "90s");
        assert_eq!(Duration::from_millis(0).to_string(), "0ms");
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
