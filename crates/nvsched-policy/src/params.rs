//! Policy parameters, declared once per policy ([`ParamSpec`]) and used for parsing
//! `key=value` lists, validation, defaults and the `nvsched policies` listing.

use nvsched_core::Nanos;
use std::fmt;

/// Type and accepted range of one parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamKind {
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    /// A duration with a unit: `500us`, `2ms`, `1s`, `250ns`.
    Duration {
        min: Nanos,
        max: Nanos,
    },
    /// Bytes per second with a unit: `300MB/s`, `1.5GiB/s`, `800k` (KB = 1000, KiB = 1024).
    Rate {
        min: f64,
        max: f64,
    },
    Bool,
    Choice(&'static [&'static str]),
}

/// One declared parameter.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    /// Default, written as a user would write it.
    pub default: &'static str,
    pub help: &'static str,
}

impl ParamSpec {
    /// The accepted values, for error messages and listings.
    pub fn accepted(&self) -> String {
        match self.kind {
            ParamKind::Int { min, max } => format!("integer {min}..={max}"),
            ParamKind::Float { min, max } => format!("number {min}..={max}"),
            ParamKind::Duration { min, max } => format!("duration {min}..={max}"),
            ParamKind::Rate { min, max } => {
                format!("rate {}..={}", format_rate(min), format_rate(max))
            }
            ParamKind::Bool => "0 or 1".to_string(),
            ParamKind::Choice(options) => options.join("|"),
        }
    }

    fn parse(&self, raw: &str) -> Result<ParamValue, String> {
        let raw = raw.trim();
        match self.kind {
            ParamKind::Int { min, max } => {
                let v: i64 = raw.parse().map_err(|_| format!("'{raw}' is not an integer"))?;
                in_range(v, min, max, raw).map(ParamValue::Int)
            }
            ParamKind::Float { min, max } => {
                let v: f64 = raw.parse().map_err(|_| format!("'{raw}' is not a number"))?;
                if !v.is_finite() {
                    return Err(format!("'{raw}' is not a finite number"));
                }
                in_range(v, min, max, raw).map(ParamValue::Float)
            }
            ParamKind::Duration { min, max } => {
                let v = parse_duration(raw)?;
                in_range(v, min, max, raw).map(ParamValue::Duration)
            }
            ParamKind::Rate { min, max } => {
                let v = parse_rate(raw)?;
                in_range(v, min, max, raw).map(ParamValue::Float)
            }
            ParamKind::Bool => match raw {
                "1" | "true" | "on" | "yes" => Ok(ParamValue::Bool(true)),
                "0" | "false" | "off" | "no" => Ok(ParamValue::Bool(false)),
                _ => Err(format!("'{raw}' is not a boolean")),
            },
            ParamKind::Choice(options) => options
                .iter()
                .find(|o| **o == raw)
                .map(|o| ParamValue::Choice(o))
                .ok_or_else(|| format!("'{raw}' is not one of the choices")),
        }
    }
}

fn in_range<T: PartialOrd + fmt::Display>(v: T, min: T, max: T, raw: &str) -> Result<T, String> {
    if v < min || v > max {
        Err(format!("'{raw}' is out of range"))
    } else {
        Ok(v)
    }
}

/// Parses `250ns`, `12us`, `1.5ms`, `2s`; a bare `0` is allowed, other bare numbers are
/// refused because their unit would be a guess.
pub fn parse_duration(raw: &str) -> Result<Nanos, String> {
    let raw = raw.trim();
    let split = raw.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(raw.len());
    let (num, unit) = raw.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("'{raw}' is not a duration"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("'{raw}' is not a duration"));
    }
    let scale = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1.0,
        "us" | "usec" => 1e3,
        "ms" | "msec" => 1e6,
        "s" | "sec" => 1e9,
        "" if value == 0.0 => 1.0,
        "" => return Err(format!("'{raw}' needs a unit (ns, us, ms or s)")),
        _ => return Err(format!("'{raw}' has an unknown unit '{unit}' (ns, us, ms or s)")),
    };
    Ok(Nanos((value * scale).round() as u64))
}

/// Parses a bandwidth in bytes per second: `300MB/s`, `1.5GiB/s`, `800k`, `1000000`.
/// SI prefixes (k, M, G: powers of 1000) and binary ones (Ki, Mi, Gi: 1024).
pub fn parse_rate(raw: &str) -> Result<f64, String> {
    let trimmed = raw.trim();
    let body = trimmed.strip_suffix("/s").unwrap_or(trimmed);
    let body = body.strip_suffix(['B', 'b']).unwrap_or(body);
    let split = body.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(body.len());
    let (num, unit) = body.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("'{raw}' is not a rate"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("'{raw}' is not a rate"));
    }
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "ki" => 1024.0,
        "mi" => 1024.0 * 1024.0,
        "gi" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("'{raw}' has an unknown unit (k, M, G, Ki, Mi, Gi)")),
    };
    Ok(value * scale)
}

pub fn format_rate(bytes_per_sec: f64) -> String {
    if bytes_per_sec >= 1e9 {
        format!("{}GB/s", bytes_per_sec / 1e9)
    } else if bytes_per_sec >= 1e6 {
        format!("{}MB/s", bytes_per_sec / 1e6)
    } else if bytes_per_sec >= 1e3 {
        format!("{}kB/s", bytes_per_sec / 1e3)
    } else {
        format!("{bytes_per_sec}B/s")
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ParamValue {
    Int(i64),
    Float(f64),
    Duration(Nanos),
    Bool(bool),
    Choice(&'static str),
}

/// Validated values of every declared parameter (defaults filled in).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    values: Vec<(&'static str, ParamValue)>,
    /// The parameters the user gave, in order, as `key=value` strings.
    pub given: Vec<(String, String)>,
}

/// A parameter list that did not parse or validate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError(pub String);

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ParamError {}

impl Params {
    /// Parses `key=value,key=value` against `specs`. Every error lists what is accepted.
    pub fn parse(policy: &str, specs: &[ParamSpec], list: &str) -> Result<Params, ParamError> {
        let mut given: Vec<(String, String)> = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(ParamError(format!(
                    "policy '{policy}': '{item}' is not key=value; {}",
                    accepted_keys(specs)
                )));
            };
            let key = key.trim();
            if specs.iter().all(|s| s.name != key) {
                return Err(ParamError(format!(
                    "policy '{policy}' has no parameter '{key}'; {}",
                    accepted_keys(specs)
                )));
            }
            if given.iter().any(|(k, _)| k == key) {
                return Err(ParamError(format!("policy '{policy}': parameter '{key}' given twice")));
            }
            given.push((key.to_string(), value.trim().to_string()));
        }
        let mut values = Vec::with_capacity(specs.len());
        for spec in specs {
            let (raw, from_user) = match given.iter().find(|(k, _)| k == spec.name) {
                Some((_, v)) => (v.as_str(), true),
                None => (spec.default, false),
            };
            let value = spec.parse(raw).map_err(|why| {
                let origin = if from_user { "" } else { " (built-in default)" };
                ParamError(format!(
                    "policy '{policy}', parameter '{}'{origin}: {why}; accepted: {}",
                    spec.name,
                    spec.accepted()
                ))
            })?;
            values.push((spec.name, value));
        }
        Ok(Params { values, given })
    }

    fn value(&self, name: &str) -> ParamValue {
        match self.values.iter().find(|(n, _)| *n == name) {
            Some((_, v)) => *v,
            None => panic!("parameter '{name}' is not declared by this policy"),
        }
    }

    pub fn int(&self, name: &str) -> i64 {
        match self.value(name) {
            ParamValue::Int(v) => v,
            other => panic!("parameter '{name}' is {other:?}, not an integer"),
        }
    }
    pub fn uint(&self, name: &str) -> u64 {
        u64::try_from(self.int(name)).expect("declared range keeps this non-negative")
    }
    /// Floats and rates (bytes per second).
    pub fn float(&self, name: &str) -> f64 {
        match self.value(name) {
            ParamValue::Float(v) => v,
            other => panic!("parameter '{name}' is {other:?}, not a number"),
        }
    }
    pub fn duration(&self, name: &str) -> Nanos {
        match self.value(name) {
            ParamValue::Duration(v) => v,
            other => panic!("parameter '{name}' is {other:?}, not a duration"),
        }
    }
    pub fn flag(&self, name: &str) -> bool {
        match self.value(name) {
            ParamValue::Bool(v) => v,
            other => panic!("parameter '{name}' is {other:?}, not a boolean"),
        }
    }
    pub fn choice(&self, name: &str) -> &'static str {
        match self.value(name) {
            ParamValue::Choice(v) => v,
            other => panic!("parameter '{name}' is {other:?}, not a choice"),
        }
    }
    /// Whether the user set this parameter explicitly.
    pub fn is_given(&self, name: &str) -> bool {
        self.given.iter().any(|(k, _)| k == name)
    }
}

fn accepted_keys(specs: &[ParamSpec]) -> String {
    if specs.is_empty() {
        return "it takes no parameters".to_string();
    }
    let keys: Vec<String> =
        specs.iter().map(|s| format!("{} ({}, default {})", s.name, s.accepted(), s.default)).collect();
    format!("accepted: {}", keys.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamSpec] = &[
        ParamSpec { name: "bound", kind: ParamKind::Int { min: 1, max: 4096 }, default: "32", help: "" },
        ParamSpec { name: "merge", kind: ParamKind::Bool, default: "0", help: "" },
        ParamSpec {
            name: "expire",
            kind: ParamKind::Duration { min: Nanos(1), max: Nanos::from_secs(60) },
            default: "5ms",
            help: "",
        },
        ParamSpec { name: "bw", kind: ParamKind::Rate { min: 1.0, max: 1e12 }, default: "1MB/s", help: "" },
        ParamSpec { name: "mode", kind: ParamKind::Choice(&["count", "latency"]), default: "count", help: "" },
    ];

    #[test]
    fn defaults_apply() {
        let p = Params::parse("k2", SPECS, "").unwrap();
        assert_eq!(p.int("bound"), 32);
        assert!(!p.flag("merge"));
        assert_eq!(p.duration("expire"), Nanos::from_ms(5));
        assert_eq!(p.float("bw"), 1e6);
        assert_eq!(p.choice("mode"), "count");
    }

    #[test]
    fn values_parse() {
        let p = Params::parse("k2", SPECS, "bound=4, merge=1,expire=250us,bw=1.5GiB/s,mode=latency").unwrap();
        assert_eq!(p.int("bound"), 4);
        assert!(p.flag("merge"));
        assert_eq!(p.duration("expire"), Nanos(250_000));
        assert_eq!(p.float("bw"), 1.5 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(p.choice("mode"), "latency");
        assert!(p.is_given("bound"));
    }

    #[test]
    fn errors_list_accepted_values() {
        let e = Params::parse("k2", SPECS, "bound=0").unwrap_err().0;
        assert!(e.contains("'0' is out of range") && e.contains("integer 1..=4096"), "{e}");
        let e = Params::parse("k2", SPECS, "bogus=1").unwrap_err().0;
        assert!(e.contains("no parameter 'bogus'") && e.contains("bound (integer 1..=4096, default 32)"), "{e}");
        let e = Params::parse("k2", SPECS, "expire=5").unwrap_err().0;
        assert!(e.contains("needs a unit"), "{e}");
        let e = Params::parse("k2", SPECS, "bound").unwrap_err().0;
        assert!(e.contains("not key=value"), "{e}");
        let e = Params::parse("k2", SPECS, "bound=1,bound=2").unwrap_err().0;
        assert!(e.contains("given twice"), "{e}");
        let e = Params::parse("k2", SPECS, "mode=fast").unwrap_err().0;
        assert!(e.contains("count|latency"), "{e}");
    }
}
