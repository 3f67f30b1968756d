//! What a job does when an I/O fails (real devices): fio's `continue_on_error` and
//! `ignore_error`. By default the first failed I/O fails the job. With
//! `continue_on_error`, a failure of a covered kind whose error is non-fatal (EIO and
//! EILSEQ, as in fio, plus what `ignore_error` lists for that kind) is counted and the
//! job goes on.

use nvsched_core::Op;

/// The kinds of failure fio tells apart: reads, writes (and every other request), and
/// verify mismatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Read = 0,
    Write = 1,
    Verify = 2,
}

impl ErrorKind {
    /// fio's `td_error_type`: a read's failure is a read error, anything else a write error.
    pub fn of(op: Op) -> ErrorKind {
        if op == Op::Read {
            ErrorKind::Read
        } else {
            ErrorKind::Write
        }
    }
}

/// fio's non-fatal errors: EIO and EILSEQ.
const NON_FATAL: [i32; 2] = [5, 84];

/// A job's `continue_on_error` and `ignore_error`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorPolicy {
    /// Per kind (read, write, verify): go on after a non-fatal error of that kind.
    pub continue_on: [bool; 3],
    /// Per kind: errors treated as non-fatal besides EIO and EILSEQ.
    pub ignore: [Vec<i32>; 3],
}

impl ErrorPolicy {
    /// Whether the job goes on after `errno` on a request of `kind`.
    pub fn goes_on(&self, kind: ErrorKind, errno: i32) -> bool {
        let k = kind as usize;
        self.continue_on[k] && (NON_FATAL.contains(&errno) || self.ignore[k].contains(&errno))
    }

    /// Whether fio reports the error counts (`total_err`, `first_error`): with any
    /// `continue_on_error`.
    pub fn counts_errors(&self) -> bool {
        self.continue_on.iter().any(|&c| c)
    }
}

/// ENOSPC or EDQUOT: the file system (or the user's quota) is full, which ends a
/// `fill_device` job as fio ends it: without an error.
pub fn is_out_of_space(errno: i32) -> bool {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    errno == ENOSPC || errno == EDQUOT
}

/// Parses `continue_on_error`'s value into the kinds it covers.
pub fn parse_continue_on(v: &str) -> Result<[bool; 3], String> {
    Ok(match v {
        "none" | "0" => [false; 3],
        "read" => [true, false, false],
        "write" => [false, true, false],
        "io" => [true, true, false],
        "verify" => [false, false, true],
        "all" | "1" => [true; 3],
        other => return Err(format!("'{other}' is not one of none, read, write, io, verify, all, 0, 1")),
    })
}

/// Parses `ignore_error`: up to three comma-separated lists (read, write, verify), each
/// of errno names or numbers separated by ':'.
pub fn parse_ignore_lists(v: &str) -> Result<[Vec<i32>; 3], String> {
    let lists: Vec<&str> = v.split(',').collect();
    if lists.len() > 3 {
        return Err(format!("'{v}': at most three lists (read, write, verify)"));
    }
    let mut out: [Vec<i32>; 3] = Default::default();
    for (k, list) in lists.iter().enumerate() {
        for name in list.split(':').map(str::trim).filter(|n| !n.is_empty()) {
            out[k].push(errno_of(name)?);
        }
    }
    Ok(out)
}

/// The errno a name (`ENOSPC`) or number (`28`) stands for, as on Linux.
fn errno_of(name: &str) -> Result<i32, String> {
    if let Ok(n) = name.parse::<i32>() {
        return if n > 0 { Ok(n) } else { Err(format!("'{name}' is not an error number")) };
    }
    ERRNO_NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, e)| e)
        .ok_or_else(|| format!("'{name}' is not an error name nvsched knows; give its number (errno) instead"))
}

/// Linux's numbers of the errors a block device or file is likely to return.
const ERRNO_NAMES: &[(&str, i32)] = &[
    ("EPERM", 1),
    ("ENOENT", 2),
    ("EINTR", 4),
    ("EIO", 5),
    ("ENXIO", 6),
    ("E2BIG", 7),
    ("EBADF", 9),
    ("EAGAIN", 11),
    ("ENOMEM", 12),
    ("EACCES", 13),
    ("EFAULT", 14),
    ("EBUSY", 16),
    ("EEXIST", 17),
    ("ENODEV", 19),
    ("EINVAL", 22),
    ("EFBIG", 27),
    ("ENOSPC", 28),
    ("ESPIPE", 29),
    ("EROFS", 30),
    ("ERANGE", 34),
    ("ENODATA", 61),
    ("ETIME", 62),
    ("EBADMSG", 74),
    ("EOVERFLOW", 75),
    ("EILSEQ", 84),
    ("EOPNOTSUPP", 95),
    ("ENOTSUP", 95),
    ("ETIMEDOUT", 110),
    ("EREMOTEIO", 121),
    ("ECANCELED", 125),
    ("EKEYEXPIRED", 127),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_fatal_errors_of_covered_kinds_go_on() {
        let mut p = ErrorPolicy { continue_on: parse_continue_on("write").unwrap(), ..Default::default() };
        assert!(p.goes_on(ErrorKind::Write, 5), "EIO on a write");
        assert!(!p.goes_on(ErrorKind::Read, 5), "reads are not covered");
        assert!(!p.goes_on(ErrorKind::Write, 28), "ENOSPC is fatal unless ignore_error lists it");
        p.ignore = parse_ignore_lists(",ENOSPC:22").unwrap();
        assert!(p.goes_on(ErrorKind::Write, 28) && p.goes_on(ErrorKind::Write, 22));
        assert!(!ErrorPolicy::default().goes_on(ErrorKind::Write, 5), "by default every error is fatal");
        assert_eq!(ErrorKind::of(Op::Flush), ErrorKind::Write);
        assert!(!ErrorPolicy::default().counts_errors() && p.counts_errors());
    }

    #[test]
    fn bad_values_are_explained() {
        assert!(parse_continue_on("sometimes").unwrap_err().contains("not one of"));
        assert!(parse_ignore_lists("EWHAT").unwrap_err().contains("give its number"));
        assert!(parse_ignore_lists("a,b,c,d").unwrap_err().contains("at most three"));
        assert_eq!(parse_continue_on("1").unwrap(), [true; 3]);
        assert_eq!(parse_ignore_lists("EIO,,84").unwrap(), [vec![5], vec![], vec![84]]);
    }
}
