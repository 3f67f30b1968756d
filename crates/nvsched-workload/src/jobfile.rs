//! The INI layer of fio job files: sections, options with their file and line,
//! `include`, `${VAR}` and the `$pagesize`/`$ncpus`/`$mb_memory` keywords. Turning option
//! values into a job description is [`crate::spec`]'s work.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where something was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: Arc<Path>,
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // line 0: not a line of a file but a command-line option, its "file" naming it
        match self.line {
            0 => write!(f, "{}", self.file.display()),
            line => write!(f, "{}:{line}", self.file.display()),
        }
    }
}

/// An error in a job file, naming the file, line and option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFileError {
    pub at: Option<Location>,
    pub option: Option<String>,
    pub message: String,
}

impl JobFileError {
    pub fn new(at: &Location, option: Option<&str>, message: impl Into<String>) -> JobFileError {
        JobFileError { at: Some(at.clone()), option: option.map(str::to_string), message: message.into() }
    }

    /// An error about the whole of job file `path` (no line to name) names the file.
    pub fn in_file(mut self, path: &Path) -> JobFileError {
        if self.at.is_none() {
            self.message = format!("{}: {}", path.display(), self.message);
        }
        self
    }
}

impl fmt::Display for JobFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(at) = &self.at {
            write!(f, "{at}: ")?;
        }
        if let Some(opt) = &self.option {
            write!(f, "option '{opt}': ")?;
        }
        f.write_str(&self.message)
    }
}
impl std::error::Error for JobFileError {}

/// One `key=value` (or bare `key`) line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOption {
    pub key: String,
    /// The value after `${VAR}` and keyword expansion; `None` for a bare flag. fio's
    /// "job options" report it so too.
    pub value: Option<String>,
    /// The value as written, for errors to name what a bad value was expanded from.
    pub written: Option<String>,
    pub at: Location,
}

/// A `[name]` section and its options, includes resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawSection {
    pub name: String,
    pub options: Vec<RawOption>,
    pub at: Location,
}

impl RawSection {
    /// fio: a section whose name starts with "global" sets defaults.
    pub fn is_global(&self) -> bool {
        self.name.starts_with("global")
    }
}

/// Values substituted for `${VAR}` and `$keyword`; injectable so tests and runs are
/// reproducible.
pub trait Environment {
    fn var(&self, name: &str) -> Option<String>;
    fn keyword(&self, name: &str) -> Option<u64>;
}

/// The process environment and this host's page size, memory and CPU count.
pub struct HostEnvironment;

impl Environment for HostEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn keyword(&self, name: &str) -> Option<u64> {
        match name {
            "pagesize" => Some(4096),
            "ncpus" => std::thread::available_parallelism().ok().map(|n| n.get() as u64),
            "mb_memory" => host_memory_mb(),
            _ => None,
        }
    }
}

fn host_memory_mb() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

const MAX_INCLUDE_DEPTH: usize = 16;

/// Reads and splits a job file.
pub fn read_job_file(path: &Path, env: &dyn Environment) -> Result<Vec<RawSection>, JobFileError> {
    let text = std::fs::read_to_string(path).map_err(|e| JobFileError {
        at: None,
        option: None,
        message: format!("cannot read job file '{}': {e}", path.display()),
    })?;
    parse_job_text(&text, path, env)
}

/// Splits job-file text into sections. `path` names the text in errors and anchors
/// relative includes.
pub fn parse_job_text(text: &str, path: &Path, env: &dyn Environment) -> Result<Vec<RawSection>, JobFileError> {
    let mut sections: Vec<RawSection> = Vec::new();
    let file: Arc<Path> = Arc::from(path);
    parse_into(text, &file, env, &mut sections, 0, true)?;
    Ok(sections)
}

fn parse_into(
    text: &str,
    file: &Arc<Path>,
    env: &dyn Environment,
    sections: &mut Vec<RawSection>,
    depth: usize,
    sections_allowed: bool,
) -> Result<(), JobFileError> {
    for (idx, raw_line) in text.lines().enumerate() {
        let at = Location { file: file.clone(), line: idx + 1 };
        // fio ends every line at its first ';' or '#' (strip_blank_end): whole-line and
        // trailing comments alike, so no value can hold either character
        let line = raw_line.split([';', '#']).next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            if !sections_allowed {
                return Err(JobFileError::new(&at, None, "no new sections in included files"));
            }
            let Some(name) = rest.strip_suffix(']') else {
                return Err(JobFileError::new(&at, None, format!("section header '{line}' has no closing ']'")));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(JobFileError::new(&at, None, "empty section name '[]'"));
            }
            sections.push(RawSection { name: name.to_string(), options: Vec::new(), at });
            continue;
        }
        if let Some(target) = line.strip_prefix("include ") {
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(JobFileError::new(&at, None, "includes nested too deeply (a cycle?)"));
            }
            if sections.is_empty() {
                return Err(JobFileError::new(&at, None, "include outside of a [] job section"));
            }
            let target = target.trim();
            let resolved = resolve_include(target, file);
            let included = std::fs::read_to_string(&resolved)
                .map_err(|e| JobFileError::new(&at, None, format!("cannot read included file '{target}': {e}")))?;
            let inc_file: Arc<Path> = Arc::from(resolved.as_path());
            parse_into(&included, &inc_file, env, sections, depth + 1, false)?;
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (line, None),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(JobFileError::new(&at, None, format!("'{line}' is not an option line (key=value)")));
        }
        let Some(section) = sections.last_mut() else {
            return Err(JobFileError::new(&at, Some(key), "option outside of a [] job section"));
        };
        let expanded = match value {
            Some(v) => Some(expand(v, env).map_err(|m| JobFileError::new(&at, Some(key), m))?),
            None => None,
        };
        section.options.push(RawOption {
            key: key.to_string(),
            value: expanded,
            written: value.map(str::to_string),
            at,
        });
    }
    Ok(())
}

/// Job options given on the command line as `KEY=VALUE` (or a bare `KEY`), read as a job
/// file's lines are (`${VAR}` expanded); each is located at `FLAG OPTION`, which errors
/// about it name.
pub fn command_line_options(
    flag: &str,
    options: &[String],
    env: &dyn Environment,
) -> Result<Vec<RawOption>, JobFileError> {
    options
        .iter()
        .map(|option| {
            let file: Arc<Path> = Arc::from(Path::new(&format!("{flag} {option}")));
            let at = Location { file: file.clone(), line: 0 };
            if option.contains(['\n', '[', ';', '#']) || option.starts_with("include ") {
                return Err(JobFileError::new(&at, None, "expected one job option, KEY=VALUE"));
            }
            let mut sections = vec![RawSection { name: flag.to_string(), options: Vec::new(), at: at.clone() }];
            parse_into(option, &file, env, &mut sections, 0, false).map_err(|mut e| {
                e.at = Some(at.clone());
                e
            })?;
            let mut parsed = sections.pop().map(|s| s.options).unwrap_or_default();
            match parsed.pop() {
                Some(mut o) if parsed.is_empty() => {
                    o.at = at;
                    Ok(o)
                }
                _ => Err(JobFileError::new(&at, None, "expected one job option, KEY=VALUE")),
            }
        })
        .collect()
}

/// Appends `options` to every job section (not `[global]`), after its own options, so
/// they win over the job's and the global values alike.
pub fn set_in_every_job(sections: &mut [RawSection], options: &[RawOption]) {
    for section in sections.iter_mut().filter(|s| !s.is_global()) {
        section.options.extend(options.iter().cloned());
    }
}

/// fio resolves an include against the working directory first, then beside the file
/// that includes it.
fn resolve_include(target: &str, including: &Path) -> PathBuf {
    let direct = PathBuf::from(target);
    if direct.is_absolute() || direct.exists() {
        return direct;
    }
    including.parent().map_or(direct.clone(), |dir| dir.join(target))
}

/// Expands `${VAR}` (environment, empty when unset) and `$pagesize`, `$ncpus`,
/// `$mb_memory`; any other `$word` stays as written, as in fio: `filename_format`'s
/// `$jobname`, `$jobnum`, `$filenum`, and shell variables in `exec_prerun`.
fn expand(value: &str, env: &dyn Environment) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(inner) = after.strip_prefix('{') {
            let Some(end) = inner.find('}') else {
                return Err(format!("'${{' without a closing '}}' in '{value}'"));
            };
            out.push_str(&env.var(&inner[..end]).unwrap_or_default());
            rest = &inner[end + 1..];
        } else {
            let end = after.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(after.len());
            let word = &after[..end];
            match env.keyword(word) {
                Some(v) => out.push_str(&v.to_string()),
                None => {
                    out.push('$');
                    out.push_str(word);
                }
            }
            rest = &after[end..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    pub struct FixedEnv(pub BTreeMap<String, String>);
    impl Environment for FixedEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
        fn keyword(&self, name: &str) -> Option<u64> {
            match name {
                "pagesize" => Some(4096),
                "ncpus" => Some(2),
                "mb_memory" => Some(1024),
                _ => None,
            }
        }
    }
    pub fn env() -> FixedEnv {
        FixedEnv(BTreeMap::from([("BS".to_string(), "8k".to_string())]))
    }

    fn parse(text: &str) -> Result<Vec<RawSection>, JobFileError> {
        parse_job_text(text, Path::new("t.fio"), &env())
    }

    #[test]
    fn sections_options_and_comments() {
        let s = parse("; c\n# c\n[global]\nbs=4k\n\n[a]\ntime_based\nrw = randread \n").unwrap();
        assert_eq!(s.len(), 2);
        assert!(s[0].is_global());
        assert_eq!(s[1].options[0].key, "time_based");
        assert_eq!(s[1].options[0].value, None);
        assert_eq!(s[1].options[1].value.as_deref(), Some("randread"));
        assert_eq!(s[1].options[1].at.line, 8);
        // trailing comments too, as fio strips them (its own tiobench example has one)
        let s = parse("[a] ; the job\nnumjobs=4\t; four\nrw=read # sequential\ndescription=x;y\n").unwrap();
        assert_eq!(s[0].name, "a");
        let values: Vec<_> = s[0].options.iter().map(|o| (o.key.as_str(), o.value.as_deref().unwrap())).collect();
        assert_eq!(values, [("numjobs", "4"), ("rw", "read"), ("description", "x")]);
    }

    #[test]
    fn variables_and_keywords() {
        let s = parse("[a]\nbs=${BS}\nsize=${UNSET}1m\niodepth=$ncpus\n").unwrap();
        assert_eq!(s[0].options[0].value.as_deref(), Some("8k"));
        assert_eq!(s[0].options[0].written.as_deref(), Some("${BS}"));
        assert_eq!(s[0].options[1].value.as_deref(), Some("1m"));
        assert_eq!(s[0].options[2].value.as_deref(), Some("2"));
        // other words stay as written, as fio leaves them (shell variables in exec_prerun)
        let s = parse("[a]\nexec_prerun=echo $HOME $ncpus\n").unwrap();
        assert_eq!(s[0].options[0].value.as_deref(), Some("echo $HOME 2"));
    }

    #[test]
    fn structural_errors_name_the_line() {
        let e = parse("bs=4k\n").unwrap_err();
        assert_eq!(e.to_string(), "t.fio:1: option 'bs': option outside of a [] job section");
        let e = parse("[a\n").unwrap_err();
        assert!(e.to_string().starts_with("t.fio:1: section header"), "{e}");
        let e = parse("[a]\nbs=${X\n").unwrap_err();
        assert!(e.to_string().contains("without a closing"), "{e}");
        let e = parse("[a]\nbs 4k\n").unwrap_err();
        assert!(e.to_string().contains("not an option line"), "{e}");
        let e = parse("[]\n").unwrap_err();
        assert!(e.to_string().contains("empty section name"), "{e}");
    }

    #[test]
    fn includes_resolve_and_refuse_sections() {
        let dir = std::env::temp_dir().join(format!("nvsched-inc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("common.fio"), "bs=16k\n").unwrap();
        std::fs::write(dir.join("bad.fio"), "[x]\n").unwrap();
        let main = dir.join("main.fio");
        let s = parse_job_text("[a]\ninclude common.fio\n", &main, &env()).unwrap();
        assert_eq!(s[0].options[0].value.as_deref(), Some("16k"));
        let e = parse_job_text("[a]\ninclude bad.fio\n", &main, &env()).unwrap_err();
        assert!(e.to_string().contains("no new sections"), "{e}");
        let e = parse_job_text("[a]\ninclude missing.fio\n", &main, &env()).unwrap_err();
        assert!(e.to_string().contains("cannot read included file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
