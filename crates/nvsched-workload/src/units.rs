//! fio's value syntax: sizes with its unit quirks, times with per-option default units,
//! booleans, percentages and parenthesised arithmetic.
//!
//! With the default `kb_base=1024`, `k`/`kb`/`K`/`KB` (and `ki`, without the trailing
//! `b`) are powers of 1024 while `kib`/`KiB` are powers of 1000 — an inversion fio keeps
//! for old scripts (../shared/reference/workloads.md §0). `kb_base=1000` swaps them.

use nvsched_core::Nanos;

/// The base fio uses for `k`, `m`, ... (option `kb_base`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KbBase {
    #[default]
    Binary,
    Decimal,
}

/// Parses a size (fio "int" with data units): `4k`, `1MiB`, `0x1000`, `512`, `(4*1024)`.
/// Fractions (`1.5g`) are rounded down to whole bytes.
pub fn parse_size(raw: &str, kb_base: KbBase) -> Result<u64, String> {
    let s = raw.trim();
    if s.is_empty() {
        return Err("empty value".into());
    }
    if let Some(expr) = paren_expr(s) {
        let v = eval_expr(expr)?;
        return to_u64(v, raw);
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| format!("'{raw}' is not a hexadecimal number"));
    }
    let (num, suffix) = split_number(s);
    if num.is_empty() {
        return Err(format!("'{raw}' is not a number"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{raw}' is not a number"))?;
    let mult = size_multiplier(suffix, kb_base).ok_or_else(|| {
        format!("'{raw}' has an unknown unit '{suffix}' (use k, m, g, t, p, optionally with b or ib)")
    })?;
    to_u64(value * mult as f64, raw)
}

fn to_u64(v: f64, raw: &str) -> Result<u64, String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("'{raw}' must not be negative"));
    }
    if v >= u64::MAX as f64 {
        return Err(format!("'{raw}' is too large"));
    }
    Ok(v.floor() as u64)
}

fn size_multiplier(suffix: &str, kb_base: KbBase) -> Option<u64> {
    let lower = suffix.to_ascii_lowercase();
    if lower.is_empty() || lower == "b" {
        return Some(1);
    }
    let (power, inverted) = match lower.as_str() {
        "k" | "kb" | "ki" => (1, false),
        "m" | "mb" | "mi" => (2, false),
        "g" | "gb" | "gi" => (3, false),
        "t" | "tb" | "ti" => (4, false),
        "p" | "pb" | "pi" => (5, false),
        "kib" => (1, true),
        "mib" => (2, true),
        "gib" => (3, true),
        "tib" => (4, true),
        "pib" => (5, true),
        _ => return None,
    };
    let binary = match kb_base {
        KbBase::Binary => !inverted,
        KbBase::Decimal => inverted,
    };
    let base: u64 = if binary { 1024 } else { 1000 };
    Some(base.pow(power))
}

/// Parses a time. A bare number is in `default_unit`; suffixes `d h m s ms msec us usec`
/// (in a time, `m` is minutes). Inside parentheses the implied unit is microseconds.
pub fn parse_time(raw: &str, default_unit: Nanos) -> Result<Nanos, String> {
    let s = raw.trim();
    if s.is_empty() {
        return Err("empty value".into());
    }
    if let Some(expr) = paren_expr(s) {
        let us = eval_expr(expr)?;
        if !us.is_finite() || us < 0.0 {
            return Err(format!("'{raw}' must not be negative"));
        }
        return Ok(Nanos((us * 1e3).round() as u64));
    }
    let (num, suffix) = split_number(s);
    if num.is_empty() {
        return Err(format!("'{raw}' is not a time"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{raw}' is not a time"))?;
    if value < 0.0 {
        return Err(format!("'{raw}' must not be negative"));
    }
    let unit_ns: f64 = match suffix.to_ascii_lowercase().as_str() {
        "" => default_unit.0 as f64,
        "d" => 86_400e9,
        "h" => 3_600e9,
        "m" | "min" => 60e9,
        "s" | "sec" => 1e9,
        "ms" | "msec" => 1e6,
        "us" | "usec" => 1e3,
        "ns" | "nsec" => 1.0,
        other => return Err(format!("'{raw}' has an unknown time unit '{other}' (use d, h, m, s, ms, us)")),
    };
    let ns = value * unit_ns;
    if !ns.is_finite() || ns >= u64::MAX as f64 {
        return Err(format!("'{raw}' is too large"));
    }
    Ok(Nanos(ns.round() as u64))
}

/// fio booleans are integers: 0 or 1 (a bare flag means 1).
pub fn parse_bool(raw: &str) -> Result<bool, String> {
    match raw.trim() {
        "1" => Ok(true),
        "0" => Ok(false),
        other => Err(format!("'{other}' is not a boolean (0 or 1)")),
    }
}

/// An integer in `[min, max]`; accepts fio's size suffixes like fio does (`1k` = 1024).
pub fn parse_int_in(raw: &str, min: i64, max: i64) -> Result<i64, String> {
    let s = raw.trim();
    let v: i64 = if let Some(rest) = s.strip_prefix('-') {
        let mag = parse_size(rest, KbBase::Binary).map_err(|_| format!("'{s}' is not an integer"))?;
        -(i64::try_from(mag).map_err(|_| format!("'{s}' is too large"))?)
    } else {
        let mag = parse_size(s, KbBase::Binary).map_err(|_| format!("'{s}' is not an integer"))?;
        i64::try_from(mag).map_err(|_| format!("'{s}' is too large"))?
    };
    if v < min || v > max {
        return Err(format!("{v} is out of range {min}..={max}"));
    }
    Ok(v)
}

/// A size or a percentage of the file/device (`size=20%`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SizeOrPercent {
    Bytes(u64),
    Percent(f64),
}

impl SizeOrPercent {
    pub fn resolve(self, whole: u64) -> u64 {
        match self {
            SizeOrPercent::Bytes(b) => b,
            SizeOrPercent::Percent(p) => (whole as f64 * p / 100.0).floor() as u64,
        }
    }
}

pub fn parse_size_or_percent(raw: &str, kb_base: KbBase) -> Result<SizeOrPercent, String> {
    let s = raw.trim();
    if let Some(p) = s.strip_suffix('%') {
        let v: f64 = p.trim().parse().map_err(|_| format!("'{s}' is not a percentage"))?;
        if !(v > 0.0 && v <= 100.0) {
            return Err(format!("'{s}' must be a percentage in (0, 100]"));
        }
        return Ok(SizeOrPercent::Percent(v));
    }
    parse_size(s, kb_base).map(SizeOrPercent::Bytes)
}

fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || ((c == '-' || c == '+') && i == 0)))
        .map_or(s.len(), |(i, _)| i);
    (&s[..end], s[end..].trim())
}

/// A value starting with '(' is an arithmetic expression (evaluated whole, so unbalanced
/// parentheses are reported as such).
fn paren_expr(s: &str) -> Option<&str> {
    s.starts_with('(').then_some(s)
}

/// Evaluates `+ - * / % ^` with parentheses over plain numbers.
pub fn eval_expr(expr: &str) -> Result<f64, String> {
    let tokens: Vec<char> = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = ExprParser { t: &tokens, i: 0, depth: 0 };
    let v = p.sum()?;
    if p.i != tokens.len() {
        return Err(format!("cannot evaluate '{expr}'"));
    }
    if !v.is_finite() {
        return Err(format!("'({expr})' does not evaluate to a finite number"));
    }
    Ok(v)
}

struct ExprParser<'a> {
    t: &'a [char],
    i: usize,
    depth: u32,
}

impl ExprParser<'_> {
    fn peek(&self) -> Option<char> {
        self.t.get(self.i).copied()
    }
    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Ok(v)
    }
    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.i += 1;
            let r = self.power()?;
            if (op == '/' || op == '%') && r == 0.0 {
                return Err("division by zero in expression".into());
            }
            v = match op {
                '*' => v * r,
                '/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }
    fn power(&mut self) -> Result<f64, String> {
        let base = self.atom()?;
        if self.peek() == Some('^') {
            self.i += 1;
            let exp = self.power()?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }
    fn atom(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some('(') => {
                self.depth += 1;
                if self.depth > 64 {
                    return Err("expression nested too deeply".into());
                }
                self.i += 1;
                let v = self.sum()?;
                if self.peek() != Some(')') {
                    return Err("unbalanced parentheses in expression".into());
                }
                self.i += 1;
                self.depth -= 1;
                Ok(v)
            }
            Some('-') => {
                self.i += 1;
                Ok(-self.atom()?)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => {
                let start = self.i;
                while matches!(self.peek(), Some(c) if c.is_ascii_digit() || c == '.') {
                    self.i += 1;
                }
                let s: String = self.t[start..self.i].iter().collect();
                s.parse().map_err(|_| format!("'{s}' is not a number"))
            }
            Some(c) => Err(format!("unexpected '{c}' in expression")),
            None => Err("expression ends early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_units_follow_fio_quirk() {
        let b = KbBase::Binary;
        assert_eq!(parse_size("4k", b), Ok(4096));
        assert_eq!(parse_size("4K", b), Ok(4096));
        assert_eq!(parse_size("4kb", b), Ok(4096));
        assert_eq!(parse_size("1KiB", b), Ok(1000));
        assert_eq!(parse_size("1MiB", b), Ok(1_000_000));
        assert_eq!(parse_size("1mi", b), Ok(1_048_576));
        assert_eq!(parse_size("1g", b), Ok(1 << 30));
        assert_eq!(parse_size("2t", b), Ok(2 << 40));
        assert_eq!(parse_size("0x1000", b), Ok(4096));
        assert_eq!(parse_size("512", b), Ok(512));
        assert_eq!(parse_size("512b", b), Ok(512));
        assert_eq!(parse_size("(4*1024)", b), Ok(4096));
        assert_eq!(parse_size("1.5k", b), Ok(1536));
        let d = KbBase::Decimal;
        assert_eq!(parse_size("4k", d), Ok(4000));
        assert_eq!(parse_size("1KiB", d), Ok(1024));
    }

    #[test]
    fn size_errors() {
        assert!(parse_size("abc", KbBase::Binary).unwrap_err().contains("not a number"));
        assert!(parse_size("4q", KbBase::Binary).unwrap_err().contains("unknown unit 'q'"));
        assert!(parse_size("-4k", KbBase::Binary).unwrap_err().contains("negative"));
        assert!(parse_size("", KbBase::Binary).is_err());
        assert!(parse_size("(4*", KbBase::Binary).is_err());
    }

    #[test]
    fn time_units_depend_on_option() {
        let s = Nanos::from_secs(1);
        let us = Nanos::from_us(1);
        assert_eq!(parse_time("30", s), Ok(Nanos::from_secs(30)));
        assert_eq!(parse_time("2000", us), Ok(Nanos::from_ms(2)));
        assert_eq!(parse_time("2m", s), Ok(Nanos::from_secs(120)));
        assert_eq!(parse_time("500ms", s), Ok(Nanos::from_ms(500)));
        assert_eq!(parse_time("10us", s), Ok(Nanos::from_us(10)));
        assert_eq!(parse_time("1h", s), Ok(Nanos::from_secs(3600)));
        assert_eq!(parse_time("1d", s), Ok(Nanos::from_secs(86_400)));
        assert_eq!(parse_time("(60*5)", s), Ok(Nanos::from_us(300)));
        assert!(parse_time("5x", s).unwrap_err().contains("unknown time unit"));
        assert!(parse_time("-1", s).unwrap_err().contains("negative"));
    }

    #[test]
    fn expressions() {
        assert_eq!(eval_expr("2^10"), Ok(1024.0));
        assert_eq!(eval_expr("(1+2)*3"), Ok(9.0));
        assert_eq!(eval_expr("10%4"), Ok(2.0));
        assert!(eval_expr("1/0").is_err());
        assert!(eval_expr("((((1").is_err());
    }

    #[test]
    fn percent_sizes() {
        assert_eq!(parse_size_or_percent("20%", KbBase::Binary), Ok(SizeOrPercent::Percent(20.0)));
        assert!(parse_size_or_percent("150%", KbBase::Binary).is_err());
        assert_eq!(SizeOrPercent::Percent(50.0).resolve(1000), 500);
    }
}
