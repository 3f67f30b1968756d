//! The files and block devices jobs run on: creation and layout like fio, and the safety
//! rules (never write to a block device or a file nvsched did not create without
//! `--allow-destructive`; never touch a mounted block device).

use nvsched_core::SimRng;
use nvsched_report::DiskUtil;
use nvsched_workload::buffers::fill_random;
use nvsched_workload::errors::is_out_of_space;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// An open target.
#[derive(Debug)]
pub struct Target {
    pub path: PathBuf,
    pub file: File,
    pub size: u64,
    pub block_device: bool,
    /// nvsched created it in this run (and removes it unless asked to keep it).
    pub created: bool,
    /// A `create_only` job laid it out: it stays, as fio's setup phase leaves it.
    pub keep: bool,
    pub writes: bool,
    /// A `fill_device` job's writes grow it during the run ([`Fill::Grow`]).
    pub grows: bool,
    /// A file shorter than the jobs need, extended with random data before the run
    /// (`--allow-destructive`), as fio lays it out again.
    pub extended: bool,
    /// A regular file's length before the run (0 for one the run created): where a
    /// `file_append` job starts.
    pub len_before: u64,
}

impl Target {
    pub fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }
}

/// What a run may do to a target.
#[derive(Clone, Debug, Default)]
pub struct Safety {
    pub allow_destructive: bool,
    /// Files nvsched created in an earlier run of the same command and kept for the later
    /// ones (a sweep's runs on a device): they may be written, extended and removed as if
    /// this run had created them.
    pub own_files: Vec<PathBuf>,
}

impl Safety {
    /// May a run overwrite, extend or remove `path`, which exists?
    pub fn may_destroy(&self, path: &Path) -> bool {
        self.allow_destructive || self.own_files.iter().any(|f| f == path)
    }
}

fn is_mounted(dev: &Path) -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else { return false };
    let Ok(canonical) = std::fs::canonicalize(dev) else { return false };
    let name = canonical.to_string_lossy().into_owned();
    mounts.lines().filter_map(|l| l.split_whitespace().next()).any(|src| {
        std::fs::canonicalize(src)
            .map(|c| c.to_string_lossy().into_owned())
            .is_ok_and(|c| c == name || c.starts_with(&name))
    })
}

fn block_device_size(file: &File) -> std::io::Result<u64> {
    let mut size: u64 = 0;
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: the ioctl writes one u64 into `size`, which outlives the call.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(size)
}

/// How a target that a `fill_device` job works on is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fill {
    /// Not a fill target, and no job has fio write it out first (its jobs only write):
    /// allocated to `size` without data if nvsched creates it, as fio does.
    Allocate,
    /// Not a fill target: laid out to `size` with data if nvsched creates it.
    No,
    /// Writes grow the file until the file system is full: a new file starts empty.
    Grow,
    /// A job reads it too: a new file is filled with data first (until the file system
    /// is full, or to `size`), as fio fills before it reads.
    LayOut,
}

/// Whether `name` is a device node, or the name of one that is missing: a block or
/// character device, or a path that does not exist in /dev's own file system (an unplugged
/// drive, a logical volume not made yet). A file in a file system mounted below /dev
/// (`/dev/shm`, `/dev/hugepages`) is a file, created if missing, as fio creates it.
pub fn is_device_node(name: &str) -> bool {
    let path = Path::new(name);
    if let Ok(meta) = std::fs::metadata(path) {
        return meta.file_type().is_block_device() || meta.file_type().is_char_device();
    }
    if !name.starts_with("/dev/") {
        return false;
    }
    let Ok(dev_fs) = std::fs::metadata("/dev").map(|m| m.dev()) else { return true };
    // the nearest directory above that exists decides which file system the name is in
    let existing = path.ancestors().skip(1).find_map(|dir| std::fs::metadata(dir).ok());
    existing.is_none_or(|dir| dir.dev() == dev_fs)
}

/// Refuses a path that exists but is neither a regular file nor a block device, naming
/// what it is (a missing path passes: it may be created).
pub fn check_kind(path: &Path) -> Result<(), String> {
    std::fs::metadata(path).map_or(Ok(()), |meta| check_kind_of(path, &meta))
}

/// [`check_kind`] with the path's metadata at hand.
fn check_kind_of(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    let what = match meta.file_type() {
        t if t.is_dir() => "a directory",
        t if t.is_char_device() => "a character device",
        t if t.is_fifo() => "a pipe",
        t if t.is_socket() => "a socket",
        _ => return Ok(()),
    };
    Err(format!("'{}' is {what}: nvsched runs I/O on a regular file or a block device", path.display()))
}

/// Opens (creating and laying out if needed) a target of at least `size` bytes. A fill
/// target holds `size` bytes if that is given (0: none), else its own length and what
/// its file system has free.
pub fn open(path: &Path, size: u64, writes: bool, safety: &Safety, fill: Fill) -> Result<Target, String> {
    let meta = std::fs::metadata(path);
    let exists = meta.is_ok();
    let block = meta.as_ref().is_ok_and(|m| m.file_type().is_block_device());
    if let Ok(m) = &meta {
        check_kind_of(path, m)?;
    }
    if block && is_mounted(path) {
        return Err(format!(
            "refusing to use '{}': the block device (or a partition of it) is mounted",
            path.display()
        ));
    }
    if writes && exists && !safety.may_destroy(path) {
        let what = if block { "a block device" } else { "a file nvsched did not create" };
        return Err(format!(
            "refusing to write to '{}': it is {what}; its data would be overwritten. Pass --allow-destructive if that is intended",
            path.display()
        ));
    }
    if !exists && is_device_node(&path.to_string_lossy()) {
        return Err(format!("'{}' does not exist", path.display()));
    }
    let created = !exists;
    let len_before = meta.as_ref().map_or(0, |m| if m.is_file() { m.len() } else { 0 });
    let short_file = meta.as_ref().ok().filter(|m| m.is_file() && fill != Fill::Grow && m.len() < size);
    let extended = match short_file {
        Some(m) if safety.may_destroy(path) => {
            extend(path, m.len(), size)?;
            true
        }
        Some(m) => {
            return Err(format!(
                "'{}' holds {} bytes but the jobs need {size}; pass --allow-destructive to extend it with random data, as fio lays it out",
                path.display(),
                m.len()
            ))
        }
        None => false,
    };
    if created {
        match fill {
            Fill::Allocate => allocate(path, size)?,
            Fill::No => layout(path, size)?,
            Fill::Grow => create_empty(path)?,
            Fill::LayOut => fill_up(path, size)?,
        }
    }
    let mut opts = OpenOptions::new();
    opts.read(true).write(writes).custom_flags(libc::O_DIRECT);
    let file = opts.open(path).map_err(|e| {
        // the directories and devices that also give EINVAL are refused above
        let why = if e.raw_os_error() == Some(libc::EINVAL) { " (its file system has no direct I/O)" } else { "" };
        format!("cannot open '{}' with O_DIRECT: {e}{why}", path.display())
    })?;
    let actual = if block {
        block_device_size(&file).map_err(|e| format!("{}: size: {e}", path.display()))?
    } else {
        file.metadata().map_err(|e| e.to_string())?.len()
    };
    let size = match fill {
        Fill::Grow if !block && size == 0 => {
            let free = free_bytes(parent_dir(path)).unwrap_or(0);
            let size = (actual + free) / FILL_ALIGN * FILL_ALIGN;
            if size == 0 {
                return Err(format!("cannot fill '{}': its file system has no room", path.display()));
            }
            size
        }
        Fill::Grow if !block => size,
        _ if actual < size => {
            return Err(format!("'{}' holds {actual} bytes but the jobs need {size}", path.display()));
        }
        _ => actual,
    };
    let grows = fill == Fill::Grow && !block;
    Ok(Target {
        path: path.to_path_buf(),
        file,
        size,
        block_device: block,
        created,
        keep: false,
        writes,
        grows,
        extended,
        len_before,
    })
}

/// Drops the target's pages from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`, as
/// fio's `invalidate`): a direct write over a cached page must invalidate it, and one with
/// `RWF_NOWAIT` fails with EAGAIN instead.
pub fn drop_cached_pages(t: &Target) -> Result<(), String> {
    // SAFETY: advice on an open descriptor; no memory is passed.
    let err = unsafe { libc::posix_fadvise(t.fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if err != 0 {
        let e = std::io::Error::from_raw_os_error(err);
        return Err(format!("cannot drop the cached pages of '{}': {e}", t.path.display()));
    }
    Ok(())
}

/// `fcntl(F_SET_RW_HINT)` (Linux 4.13).
const F_SET_RW_HINT: libc::c_int = 1024 + 12;

/// Sets the write lifetime hint (`RWH_WRITE_LIFE_*`) of the target's inode, as fio's
/// `write_hint` does: the kernel passes it to the device with each write.
pub fn set_write_hint(t: &Target, hint: u64) -> Result<(), String> {
    // SAFETY: F_SET_RW_HINT reads one u64 through the pointer, which outlives the call.
    if unsafe { libc::fcntl(t.fd(), F_SET_RW_HINT, &hint as *const u64) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("cannot set write_hint on '{}': {e}", t.path.display()));
    }
    Ok(())
}

/// A fill target's size is a multiple of this (O_DIRECT's alignment, and fio's 4 KiB).
const FILL_ALIGN: u64 = 4096;

fn parent_dir(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

fn create_new(path: &Path) -> Result<File, String> {
    // a regular file in /dev would stand where a device is expected
    if is_device_node(&path.to_string_lossy()) {
        return Err(format!("'{}' does not exist", path.display()));
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| format!("cannot create '{}': {e}", path.display()))
}

fn create_empty(path: &Path) -> Result<(), String> {
    create_new(path).map(drop)
}

/// Creates a new file and writes it until its file system is full (or to `size`, if
/// not 0), down to a multiple of [`FILL_ALIGN`].
fn fill_up(path: &Path, size: u64) -> Result<(), String> {
    let f = create_new(path)?;
    let free = free_bytes(parent_dir(path)).unwrap_or(0);
    let want = if size == 0 { free } else { size };
    let written = write_random(&f, path, want / FILL_ALIGN * FILL_ALIGN, true).inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })?;
    f.set_len(written / FILL_ALIGN * FILL_ALIGN).map_err(|e| format!("cannot fill '{}': {e}", path.display()))
}

/// Creates a new file and writes it completely (as fio lays out files), with
/// pseudo-random data so reads are not served from sparse holes. Refuses a size the file
/// system has no room for, and removes the file again if filling it fails.
pub fn layout(path: &Path, size: u64) -> Result<(), String> {
    check_room(path, size, "lay out")?;
    let f = create_new(path)?;
    reserve(&f, path, 0, size, "lay out")
        .and_then(|()| write_random(&f, path, size, false))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(path);
        })
        .map(drop)
}

/// Creates a new file of `size` bytes without data, as fio allocates the file of a job
/// that only writes (`fallocate`: the blocks are reserved, and read as zeros until
/// written); a sparse file where the file system cannot allocate ahead.
fn allocate(path: &Path, size: u64) -> Result<(), String> {
    check_room(path, size, "allocate")?;
    let f = create_new(path)?;
    let result = reserve(&f, path, 0, size, "allocate")
        .and_then(|()| f.set_len(size).map_err(|e| format!("cannot allocate '{}': {e}", path.display())));
    if result.is_err() {
        let _ = std::fs::remove_file(path);
    }
    result
}

/// Allocates the bytes `from..to` of `f` (`fallocate`, keeping its length), so a file
/// system without room for them says so at once, before any data is written: the free
/// space statvfs shows may include blocks kept back from this process too (ext4's
/// reserve, when a mount keeps it from root). A file system that cannot allocate ahead
/// passes.
fn reserve(f: &File, path: &Path, from: u64, to: u64, what: &str) -> Result<(), String> {
    let bytes = to.saturating_sub(from);
    if bytes == 0 {
        return Ok(());
    }
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(from), libc::off_t::try_from(bytes)) else {
        return Err(format!("cannot {what} '{}': {to} bytes", path.display()));
    };
    // SAFETY: fallocate on an open descriptor; no memory is passed.
    if unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len) } == 0 {
        return Ok(());
    }
    match std::io::Error::last_os_error() {
        e if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(()),
        e if e.raw_os_error().is_some_and(is_out_of_space) => Err(format!(
            "cannot {what} '{}': its file system has no room for the {bytes} bytes the jobs need (set a smaller size)",
            path.display()
        )),
        e => Err(format!("cannot {what} '{}': {e}", path.display())),
    }
}

/// Refuses a new file of `size` bytes that its file system has no room for.
fn check_room(path: &Path, size: u64, what: &str) -> Result<(), String> {
    match free_bytes(parent_dir(path)) {
        Some(free) if size > free => Err(format!(
            "cannot {what} '{}': the jobs need {size} bytes but its file system has {free} free (set a smaller size)",
            path.display()
        )),
        _ => Ok(()),
    }
}

/// Extends the file at `path` from `len` to `size` bytes of random data.
fn extend(path: &Path, len: u64, size: u64) -> Result<(), String> {
    if let Some(free) = free_bytes(parent_dir(path)) {
        if size - len > free {
            return Err(format!(
                "cannot extend '{}' to {size} bytes: its file system has {free} free (set a smaller size)",
                path.display()
            ));
        }
    }
    let f =
        OpenOptions::new().append(true).open(path).map_err(|e| format!("cannot extend '{}': {e}", path.display()))?;
    // an extension cut short (a signal, a full disk) is taken back: the file keeps the
    // length it had, as no run used it
    reserve(&f, path, len, size, "extend")
        .and_then(|()| write_random(&f, path, size - len, false))
        .map(drop)
        .inspect_err(|_| {
            let _ = f.set_len(len);
        })
}

/// Bytes this process may still write on the file system holding `dir`: what is free to
/// anyone, and as root also the blocks the file system keeps for root (ext4's 5% by
/// default), which root's writes fill as fio's `fill_device` does.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `st` has room for the struct statvfs fills.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled the struct.
    let st = unsafe { st.assume_init() };
    // SAFETY: geteuid has no preconditions.
    Some(writable_bytes(&st, unsafe { libc::geteuid() } == 0))
}

fn writable_bytes(st: &libc::statvfs, root: bool) -> u64 {
    let blocks = if root { st.f_bfree } else { st.f_bavail };
    blocks.saturating_mul(st.f_frsize)
}

/// Overwrites the first `size` bytes of an existing file or block device with
/// pseudo-random data (`--prefill`): destructive, so the caller checks the safety rules.
pub fn prefill(path: &Path, size: u64) -> Result<(), String> {
    let f = OpenOptions::new().write(true).open(path).map_err(|e| format!("cannot open '{}': {e}", path.display()))?;
    write_random(&f, path, size, false).map(drop)
}

/// Writes `size` bytes of pseudo-random data from the start of `f` and syncs them;
/// returns how many it wrote. With `until_full`, a full file system (ENOSPC, EDQUOT)
/// ends the writing early instead of failing it.
fn write_random(mut f: &File, path: &Path, size: u64, until_full: bool) -> Result<u64, String> {
    let chunk = 1 << 20;
    let mut buf = vec![0u8; chunk];
    let mut rng = SimRng::seed_from(0x9e37_79b9_7f4a_7c15);
    let mut written = 0;
    while written < size {
        if crate::interrupted() {
            return Err(format!("interrupted while writing '{}'", path.display()));
        }
        fill_random(&mut buf, &mut rng);
        let n = (size - written).min(chunk as u64) as usize;
        match f.write_all(&buf[..n]) {
            Ok(()) => written += n as u64,
            Err(e) if until_full && e.raw_os_error().is_some_and(is_out_of_space) => {
                written = f.metadata().map_or(written, |m| m.len());
                break;
            }
            Err(e) => return Err(format!("cannot fill '{}': {e}", path.display())),
        }
    }
    f.sync_all().map_err(|e| format!("cannot fill '{}': {e}", path.display()))?;
    Ok(written)
}

/// The sysfs directory of the block device holding `path` (or of `path`, a block
/// device): `/sys/dev/block/MAJOR:MINOR`, a disk or a partition.
pub fn block_device_dir(path: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(path).ok()?;
    let dev = if meta.file_type().is_block_device() { meta.rdev() } else { meta.dev() };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let dir = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    dir.exists().then_some(dir)
}

/// The kernel I/O scheduler of the device holding `path` (`/sys/.../queue/scheduler`).
pub fn kernel_scheduler(path: &Path) -> Option<String> {
    kernel_scheduler_at(path).map(|(_, name)| name)
}

/// The kernel I/O scheduler of the device holding `path`, and the sysfs file that sets
/// it.
pub fn kernel_scheduler_at(path: &Path) -> Option<(PathBuf, String)> {
    scheduler_of(&block_device_dir(path)?)
}

/// The kernel I/O schedulers the I/O to `path` passes: its device's and, where that is a
/// stack, those of the devices below it (a device-mapper or md device's `slaves/`, a loop
/// device's backing file's device), top first, each with the sysfs file that sets it
/// (once per file).
pub fn kernel_schedulers_at(path: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    if let Some(dir) = block_device_dir(path) {
        schedulers_from(&dir, &mut found, 0);
    }
    found
}

/// [`kernel_schedulers_at`] from the sysfs directory `dir` of a disk or partition down.
fn schedulers_from(dir: &Path, found: &mut Vec<(PathBuf, String)>, depth: usize) {
    const MAX_STACK: usize = 8;
    if depth > MAX_STACK {
        return;
    }
    if let Some((file, name)) = scheduler_of(dir) {
        let file = file.canonicalize().unwrap_or(file);
        if !found.iter().any(|(f, _)| *f == file) {
            found.push((file, name));
        }
    }
    // a partition's stack is its disk's
    let disk = if dir.join("partition").exists() { dir.join("..") } else { dir.to_path_buf() };
    if let Ok(entries) = std::fs::read_dir(disk.join("slaves")) {
        let mut below: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        below.sort();
        for d in below {
            schedulers_from(&d, found, depth + 1);
        }
    }
    if let Ok(backing) = std::fs::read_to_string(disk.join("loop/backing_file")) {
        if let Some(d) = block_device_dir(Path::new(backing.trim())) {
            schedulers_from(&d, found, depth + 1);
        }
    }
}

/// The scheduler a disk's (or, for a partition, its disk's) `queue/scheduler` marks.
fn scheduler_of(dir: &Path) -> Option<(PathBuf, String)> {
    for q in [dir.join("queue/scheduler"), dir.join("../queue/scheduler")] {
        if let Ok(s) = std::fs::read_to_string(&q) {
            let name = s.split_whitespace().find(|w| w.starts_with('['))?.trim_matches(['[', ']']).to_string();
            return Some((q, name));
        }
    }
    None
}

/// A block device's I/O counters (`/sys/.../stat`) at one moment, for fio's disk stats.
#[derive(Clone, Debug)]
pub struct DiskSample {
    /// The device's name (`vda`, `nvme0n1p2`).
    pub name: String,
    /// The first 11 fields: reads, read merges, read sectors, read ticks (ms), the same
    /// four for writes, in flight, io_ticks (ms), time in queue (ms).
    fields: [u64; 11],
    at: Instant,
}

impl DiskSample {
    /// Reads the counters of the device whose sysfs directory is `dir`.
    pub fn read(dir: &Path) -> Option<DiskSample> {
        let name = dir.canonicalize().ok()?.file_name()?.to_string_lossy().into_owned();
        let text = std::fs::read_to_string(dir.join("stat")).ok()?;
        let values: Vec<u64> = text.split_whitespace().map_while(|v| v.parse().ok()).collect();
        let fields = values.get(..11)?.try_into().ok()?;
        Some(DiskSample { name, fields, at: Instant::now() })
    }

    /// What the device did from `self` to `later`, as fio reports it: I/Os, merges and
    /// ticks per direction, the time in queue, and the share of the time it was busy.
    pub fn util_until(&self, later: &DiskSample) -> DiskUtil {
        let d = |i: usize| later.fields[i].saturating_sub(self.fields[i]);
        let elapsed_ms = later.at.duration_since(self.at).as_secs_f64() * 1e3;
        DiskUtil {
            name: self.name.clone(),
            read_ios: d(0),
            write_ios: d(4),
            read_merges: d(1),
            write_merges: d(5),
            read_ticks_ms: d(3),
            write_ticks_ms: d(7),
            in_queue_ms: d(10),
            util_pct: if elapsed_ms > 0.0 { (100.0 * d(9) as f64 / elapsed_ms).min(100.0) } else { 0.0 },
        }
    }
}

/// `uname -r`.
pub fn kernel_release() -> String {
    // SAFETY: uname fills the zeroed struct; the release field is NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) == 0 {
            return std::ffi::CStr::from_ptr(u.release.as_ptr()).to_string_lossy().into_owned();
        }
    }
    "unknown".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_system_without_room_says_so_before_any_data_is_written() {
        // tmpfs refuses an allocation larger than itself at once, allocating nothing
        let dir = Path::new("/dev/shm");
        // SAFETY: statfs is plain data; all zeros is a valid value.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        let c = std::ffi::CString::new("/dev/shm").unwrap();
        // SAFETY: `c` is a NUL-terminated path and `st` a struct statfs.
        let found = unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0;
        // elsewhere (ext4) a failing fallocate may fill the disk for a moment
        if !found || st.f_type != libc::TMPFS_MAGIC || st.f_blocks == 0 {
            eprintln!("SKIPPED: no sized tmpfs at /dev/shm");
            return;
        }
        let path = dir.join(format!("nvsched-reserve-{}", std::process::id()));
        let f = create_new(&path).unwrap();
        let too_much = st.f_blocks as u64 * st.f_bsize as u64 + (1 << 30);
        let result = reserve(&f, &path, 0, too_much, "lay out");
        let len = f.metadata().unwrap().len();
        std::fs::remove_file(&path).unwrap();
        let err = result.unwrap_err();
        assert!(err.contains(&format!("no room for the {too_much} bytes the jobs need")), "{err}");
        assert_eq!(len, 0, "the file keeps its length");
    }

    #[test]
    fn device_nodes_are_told_from_files_below_dev() {
        assert!(is_device_node("/dev/null"), "a character device");
        assert!(is_device_node("/dev/nvsched-no-such-drive"), "missing, in /dev's own file system");
        assert!(!is_device_node("/tmp/nvsched-no-such-file"));
        assert!(!is_device_node(&std::env::temp_dir().to_string_lossy()), "a directory is no device");
        // /dev/shm is a file system of its own where it is mounted (a container may not have it)
        let dev_fs = std::fs::metadata("/dev").unwrap().dev();
        if std::fs::metadata("/dev/shm").is_ok_and(|m| m.dev() != dev_fs) {
            assert!(!is_device_node("/dev/shm/nvsched-no-such-file"));
            assert!(!is_device_node("/dev/shm/no-such-dir/file"));
        }
    }

    #[test]
    fn root_may_write_the_blocks_the_file_system_keeps_for_root() {
        // SAFETY: statvfs is plain data; all zeros is a valid value.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        (st.f_bfree, st.f_bavail, st.f_frsize) = (1000, 950, 4096);
        assert_eq!(writable_bytes(&st, true), 1000 * 4096);
        assert_eq!(writable_bytes(&st, false), 950 * 4096);
    }

    /// A sysfs tree as the kernel lays out an LVM volume on an NVMe partition beside a
    /// SATA disk: dm-0 (bio-based, `none`) over nvme0n1p3 and sda1.
    #[test]
    fn a_stacked_device_reports_the_schedulers_of_the_disks_below_it() {
        let root = std::env::temp_dir().join(format!("nvsched-sysfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("dm-0/queue/scheduler", "[none] \n");
        write("nvme0n1/queue/scheduler", "[mq-deadline] kyber bfq none\n");
        write("nvme0n1/nvme0n1p3/partition", "3\n");
        write("sda/queue/scheduler", "mq-deadline [bfq] none\n");
        write("sda/sda1/partition", "1\n");
        std::fs::create_dir_all(root.join("dm-0/slaves")).unwrap();
        std::os::unix::fs::symlink(root.join("nvme0n1/nvme0n1p3"), root.join("dm-0/slaves/nvme0n1p3")).unwrap();
        std::os::unix::fs::symlink(root.join("sda/sda1"), root.join("dm-0/slaves/sda1")).unwrap();
        let mut found = Vec::new();
        schedulers_from(&root.join("dm-0"), &mut found, 0);
        let names: Vec<(String, &str)> = found
            .iter()
            .map(|(f, n)| {
                (f.parent().unwrap().parent().unwrap().file_name().unwrap().to_string_lossy().into(), n.as_str())
            })
            .collect();
        assert_eq!(names, [("dm-0".into(), "none"), ("nvme0n1".into(), "mq-deadline"), ("sda".into(), "bfq")]);
        // a partition alone: its disk's scheduler, once
        let mut found = Vec::new();
        schedulers_from(&root.join("nvme0n1/nvme0n1p3"), &mut found, 0);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, "mq-deadline");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
