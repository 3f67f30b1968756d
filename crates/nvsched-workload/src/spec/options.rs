//! The option table: every fio option nvsched takes, with its parser and help (the
//! single source for parsing, `nvsched options` and `--cmdhelp`), the fio options it
//! refuses with a reason, and applying one option of a section to a job.

use super::*;

type Apply = fn(&mut JobSpec, &str) -> Result<(), String>;

/// One supported option.
pub struct OptionDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// What a bare `name` (no `=value`) means, if it is accepted: `1` for flags, `""`
    /// for `write_*_log` (the default file name prefix, the job's name).
    pub bare: Option<&'static str>,
    pub help: &'static str,
    apply: Apply,
}

macro_rules! opt {
    ($name:expr, [$($alias:expr),*], $bare:expr, $help:expr, $apply:expr) => {
        OptionDef { name: $name, aliases: &[$($alias),*], bare: $bare, help: $help, apply: $apply }
    };
}

/// The value trimmed, or `missing` when nothing is left.
fn non_empty(v: &str, missing: &str) -> Result<String, String> {
    let v = v.trim();
    if v.is_empty() {
        Err(missing.to_string())
    } else {
        Ok(v.to_string())
    }
}

fn int_in(v: &str, min: i64, max: i64) -> Result<i64, String> {
    parse_int_in(v, min, max)
}

/// Every option nvsched understands; the single source for parsing and `--help` text.
pub static OPTIONS: &[OptionDef] = &[
    opt!("name", [], None, "job name (default: the section name)", |j, v| {
        if v.trim().is_empty() {
            return Err("job name must not be empty".into());
        }
        j.name = v.trim().to_string();
        Ok(())
    }),
    opt!("description", [], None, "free text, reported as fio's \"desc\"", |j, v| {
        j.description = Some(v.to_string());
        Ok(())
    }),
    opt!("filename", [], None, "target file, or files a:b:c (each clone uses every one); /dev/... means the whole simulated device", |j, v| {
        if v.is_empty() {
            return Err("filename must not be empty".into());
        }
        let mut names = colon_list(v).into_iter();
        j.filename = names.next();
        j.more_filenames = names.collect();
        Ok(())
    }),
    opt!(
        "opendir",
        [],
        None,
        "every regular file below this directory (recursively, in path order) is one of the job's files, before those filename names (as fio 3.33 orders them)",
        |j, v| {
            j.opendir = Some(non_empty(v, "opendir needs a directory")?);
            Ok(())
        }
    ),
    opt!("nrfiles", ["nr_files"], None, "files per clone when their names are generated ($jobname.$jobnum.$filenum); size is divided among them", |j, v| {
        j.nrfiles = int_in(v, 1, 4096)? as u32;
        Ok(())
    }),
    opt!(
        "filename_format",
        [],
        None,
        "names of the files of a job without filename: $jobname, $jobnum (the clone) and $filenum (the file, from 0; see nrfiles) are replaced (default $jobname.$jobnum.$filenum)",
        |j, v| {
            if v.trim().is_empty() {
                return Err("filename_format must not be empty".into());
            }
            j.filename_format = Some(v.to_string());
            Ok(())
        }
    ),
    opt!(
        "directory",
        [],
        None,
        "prefix of the job's file names; a:b spreads generated names over the clones",
        |j, v| {
            let dirs: Vec<String> = colon_list(v).into_iter().filter(|d| !d.is_empty()).collect();
            if dirs.is_empty() {
                return Err("directory must not be empty".into());
            }
            j.directory = dirs;
            Ok(())
        }
    ),
    opt!(
        "rw",
        ["readwrite"],
        None,
        "read, write, trim, randread, randwrite, randtrim, rw/readwrite, randrw, trimwrite, randtrimwrite (each block trimmed, then written); :N skips N bytes (sequential) or takes a new random offset every N I/Os",
        |j, v| {
            let (v, modifier) = match v.split_once(':') {
                Some((p, m)) => (p.trim(), Some(m.trim())),
                None => (v, None),
            };
            j.pattern = match v {
            "read" => Pattern::SeqRead,
            "write" => Pattern::SeqWrite,
            "trim" => Pattern::SeqTrim,
            "randread" => Pattern::RandRead,
            "randwrite" => Pattern::RandWrite,
            "randtrim" => Pattern::RandTrim,
            "rw" | "readwrite" => Pattern::SeqMixed,
            "randrw" => Pattern::RandMixed,
            "trimwrite" => Pattern::SeqTrimWrite,
            "randtrimwrite" => Pattern::RandTrimWrite,
            other => {
                return Err(format!(
                    "'{other}' is not a pattern; accepted: read, write, trim, randread, randwrite, randtrim, rw, readwrite, randrw, trimwrite, randtrimwrite"
                ))
            }
        };
            // fio's offset modifier: bytes added after each sequential I/O (negative:
            // backwards), or I/Os per random offset (sequential in between)
            j.rw_modifier = match modifier {
                None => 0,
                Some(m) if j.pattern.is_random() => {
                    parse_int_in(m, 1, i64::from(u32::MAX)).map_err(|e| format!("random ':N' (I/Os per offset): {e}"))?
                }
                Some(m) => {
                    let (sign, bytes) = match m.strip_prefix('-') {
                        Some(rest) => (-1, rest),
                        None => (1, m),
                    };
                    let skip = parse_size(bytes, j.kb_base).map_err(|e| format!("sequential ':SIZE' (bytes to skip): {e}"))?;
                    sign * i64::try_from(skip).map_err(|_| format!("skip '{m}' is too large"))?
                }
            };
            Ok(())
        }
    ),
    opt!(
        "rw_sequencer",
        [],
        None,
        "sequential (default) or identical: what a random pattern's :N does between random offsets, go on sequentially or repeat the offset",
        |j, v| {
            j.rw_identical = match v {
                "sequential" => false,
                "identical" => true,
                other => return Err(format!("'{other}' is not one of sequential, identical")),
            };
            Ok(())
        }
    ),
    opt!("rwmixread", [], None, "percentage of reads in a mixed pattern (0..=100)", |j, v| {
        j.rwmix_read_pct = int_in(v, 0, 100)? as u32;
        Ok(())
    }),
    opt!("rwmixwrite", [], None, "percentage of writes in a mixed pattern (0..=100)", |j, v| {
        j.rwmix_read_pct = 100 - int_in(v, 0, 100)? as u32;
        Ok(())
    }),
    opt!("bs", ["blocksize"], None, "block size per direction: read[,write[,trim]]", |j, v| {
        let kb = j.kb_base;
        let sizes = per_direction(v, |s| parse_block_size(s, kb).map(BlockSizes::Fixed))?;
        apply_per_direction(&mut j.bs, sizes, BlockSizes::Fixed(4096));
        Ok(())
    }),
    opt!(
        "bs_is_seq_rand",
        [],
        Some("1"),
        "bs's two values size sequential and random I/O (of either direction) instead of reads and writes (0 or 1)",
        |j, v| {
            j.bs_is_seq_rand = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("blockalign", ["ba"], None, "boundary random offsets are aligned to (default: the smallest block)", |j, v| {
        let kb = j.kb_base;
        let values = per_direction(v, |s| parse_block_size(s, kb))?;
        let mut given = values.iter().flatten();
        let first = *given.next().expect("per_direction gives at least one");
        if given.any(|&a| a != first) {
            return Err("different alignments per direction are not supported; give one value".into());
        }
        j.blockalign = Some(first);
        Ok(())
    }),
    opt!("bsrange", ["blocksize_range"], None, "block size range per direction: lo-hi[,lo-hi]", |j, v| {
        let kb = j.kb_base;
        let ranges = per_direction(v, |s| {
            let (lo, hi) =
                s.split_once('-').or_else(|| s.split_once(':')).ok_or_else(|| format!("'{s}' is not a range lo-hi"))?;
            let (mut lo, mut hi) = (parse_block_size(lo, kb)?, parse_block_size(hi, kb)?);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            Ok(BlockSizes::Range { min: lo, max: hi })
        })?;
        apply_per_direction(&mut j.bs, ranges, BlockSizes::Fixed(4096));
        Ok(())
    }),
    opt!("bssplit", [], None, "weighted block sizes: bs/pct:bs/pct[,...] per direction", |j, v| {
        let kb = j.kb_base;
        let splits = per_direction(v, |s| parse_bssplit(s, kb))?;
        apply_per_direction(&mut j.bs, splits, BlockSizes::Fixed(4096));
        Ok(())
    }),
    opt!("iodepth", [], None, "requests in flight for asynchronous engines (1..=65536)", |j, v| {
        j.iodepth = int_in(v, 1, 65_536)? as u32;
        Ok(())
    }),
    opt!("iodepth_batch_submit", ["iodepth_batch"], None, "requests submitted together (0 = iodepth)", |j, v| {
        j.iodepth_batch_submit = int_in(v, 0, 65_536)? as u32;
        Ok(())
    }),
    opt!(
        "iodepth_batch_complete_min",
        ["iodepth_batch_complete"],
        None,
        "a full queue waits for at least this many completions at a time before issuing again (default 1)",
        |j, v| {
            j.iodepth_batch_complete_min = int_in(v, 0, 65_536)? as u32;
            Ok(())
        }
    ),
    opt!(
        "iodepth_batch_complete_max",
        [],
        None,
        "accepted: nvsched handles completions as they arrive, however many at a time",
        |_, v| int_in(v, 0, 65_536).map(|_| ())
    ),
    opt!(
        "iodepth_low",
        [],
        None,
        "once iodepth requests are out, let them drain to this many before issuing again (default: iodepth, keeping the queue full)",
        |j, v| {
            j.iodepth_low = int_in(v, 0, 65_536)? as u32;
            Ok(())
        }
    ),
    opt!(
        "ioengine",
        [],
        None,
        "sync, psync, vsync, pvsync, pvsync2 (one request at a time); libaio, io_uring, posixaio, null (asynchronous)",
        |j, v| {
            j.engine_kind = match v {
            "sync" | "psync" | "vsync" | "pvsync" | "pvsync2" => EngineKind::Sync,
            "libaio" | "io_uring" | "posixaio" | "null" => EngineKind::Async,
            other => {
                return Err(format!(
                    "'{other}' is not a supported engine; accepted: sync, psync, vsync, pvsync, pvsync2, libaio, io_uring, posixaio, null"
                ))
            }
        };
            j.ioengine = v.to_string();
            Ok(())
        }
    ),
    opt!("direct", [], Some("1"), "O_DIRECT (0 or 1); buffered I/O goes through the simulated page cache with --page-cache, else runs as direct I/O", |j, v| {
        j.direct = parse_bool(v)?;
        Ok(())
    }),
    opt!("buffered", [], Some("1"), "the inverse of direct", |j, v| {
        j.direct = !parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "sync",
        [],
        None,
        "write open mode: none/0, sync/1 (O_SYNC), dsync (O_DSYNC); direct sync writes are FUA",
        |j, v| {
            j.sync_mode = match v {
                "none" | "0" => SyncMode::None,
                "sync" | "1" => SyncMode::Sync,
                "dsync" => SyncMode::Dsync,
                other => return Err(format!("'{other}' is not a sync mode; accepted: none, 0, sync, 1, dsync")),
            };
            Ok(())
        }
    ),
    opt!("fsync", [], None, "flush the device cache after every N writes (0 = never)", |j, v| {
        j.fsync_every = int_in(v, 0, u32::MAX.into())? as u32;
        Ok(())
    }),
    opt!("fdatasync", [], None, "like fsync, with fdatasync", |j, v| {
        j.fdatasync_every = int_in(v, 0, u32::MAX.into())? as u32;
        Ok(())
    }),
    opt!(
        "sync_file_range",
        [],
        None,
        "every N writes, sync_file_range over the range written since the last sync: FLAGS[:N], FLAGS wait_before, write and/or wait_after, comma-separated (N default 1); it writes back and waits in the page cache (--page-cache), never flushes the device",
        |j, v| {
            let (flags, every) = match v.split_once(':') {
                Some((flags, n)) => (flags, int_in(n, 1, u32::MAX.into())? as u32),
                None => (v, 1),
            };
            let mut bits = 0;
            for flag in flags.split(',').map(str::trim) {
                bits |= match flag {
                    "wait_before" => SyncRange::WAIT_BEFORE,
                    "write" => SyncRange::WRITE,
                    "wait_after" => SyncRange::WAIT_AFTER,
                    other => {
                        return Err(format!("'{other}' is not a sync_file_range flag; accepted: wait_before, write, wait_after"))
                    }
                };
            }
            j.sync_file_range = Some((SyncRange(bits), every));
            Ok(())
        }
    ),
    opt!("end_fsync", [], Some("1"), "flush once the job's writes are done (each loop), not counted in stats", |j, v| {
        j.end_fsync = parse_bool(v)?;
        Ok(())
    }),
    opt!("fsync_on_close", [], Some("1"), "like end_fsync (fio flushes at the end for either)", |j, v| {
        j.fsync_on_close = parse_bool(v)?;
        Ok(())
    }),
    opt!("numjobs", [], None, "identical clones of the job (1..=4096)", |j, v| {
        j.numjobs = int_in(v, 1, 4096)? as u32;
        Ok(())
    }),
    opt!(
        "size",
        [],
        None,
        "bytes of I/O per clone and the region it is confined to (or N% of the file/device)",
        |j, v| {
            let s = parse_size_or_percent(v, j.kb_base)?;
            if s == SizeOrPercent::Bytes(0) {
                return Err("size must be greater than 0".into());
            }
            j.size = Some(s);
            Ok(())
        }
    ),
    opt!("io_size", ["io_limit"], None, "bytes of I/O to do, independent of the region size (bytes or N% of size)", |j, v| {
        j.io_size = Some(parse_size_or_percent(v, j.kb_base)?);
        Ok(())
    }),
    opt!("offset", ["fileoffset"], None, "start of the region within the file/device (bytes or N%)", |j, v| {
        j.offset = parse_size_or_percent(v, j.kb_base).map_err(|e| e.replace("(0, 100]", "[0, 100]"))?;
        Ok(())
    }),
    opt!(
        "offset_increment",
        [],
        None,
        "clone i starts at offset + i * offset_increment (bytes, or N% of the file or device)",
        |j, v| {
            j.offset_increment = parse_size_or_percent(v, j.kb_base)?;
            Ok(())
        }
    ),
    opt!(
        "offset_align",
        [],
        None,
        "what a percentage offset is aligned up to (bytes; default 0: the smallest block size)",
        |j, v| {
            j.offset_align = parse_size(v, j.kb_base)?;
            Ok(())
        }
    ),
    opt!(
        "filesize",
        [],
        None,
        "size of each of the job's files, or a range lo-hi drawn per file (size is then the I/O amount, at most the files' total)",
        |j, v| {
            let (lo, hi) = match v.split_once('-').or_else(|| v.split_once(':')) {
                Some((lo, hi)) => (parse_size(lo, j.kb_base)?, parse_size(hi, j.kb_base)?),
                None => {
                    let s = parse_size(v, j.kb_base)?;
                    (s, s)
                }
            };
            if lo == 0 {
                return Err("filesize must be greater than 0".into());
            }
            j.filesize = Some(FileSize { low: lo.min(hi), high: lo.max(hi) });
            Ok(())
        }
    ),
    opt!("runtime", ["timeout"], None, "run-time cap, seconds unless a unit is given", |j, v| {
        j.runtime = parse_time(v, Nanos::from_secs(1))?;
        Ok(())
    }),
    opt!("time_based", [], Some("1"), "keep going until runtime ends (0 or 1)", |j, v| {
        j.time_based = parse_bool(v)?;
        Ok(())
    }),
    opt!("ramp_time", [], None, "warm-up excluded from the statistics, seconds unless a unit is given", |j, v| {
        j.ramp_time = parse_time(v, Nanos::from_secs(1))?;
        Ok(())
    }),
    opt!("startdelay", [], None, "delay before the job starts, seconds unless a unit is given", |j, v| {
        j.startdelay = parse_time(v, Nanos::from_secs(1))?;
        Ok(())
    }),
    opt!(
        "thinktime",
        [],
        None,
        "pause after every thinktime_blocks I/Os, once they completed; microseconds unless a unit is given",
        |j, v| {
            j.thinktime = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!(
        "thinktime_blocks",
        [],
        None,
        "I/Os between thinktime pauses (default 1), counted as thinktime_blocks_type says (completed, by default); what is out completes before each pause",
        |j, v| {
            j.thinktime_blocks = int_in(v, 1, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "thinktime_iotime",
        [],
        None,
        "pause for thinktime also after issuing for this long, or after thinktime_blocks I/Os if that is given, whichever comes first; seconds unless a unit is given",
        |j, v| {
            j.thinktime_iotime = parse_time(v, Nanos::from_secs(1))?;
            Ok(())
        }
    ),
    opt!(
        "thinktime_spin",
        [],
        None,
        "the part of thinktime fio spends spinning before it sleeps; microseconds unless a unit is given (the pause is thinktime either way: no host CPU is modelled for the job)",
        |j, v| {
            j.thinktime_spin = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!(
        "rate_ignore_thinktime",
        [],
        Some("1"),
        "after a thinktime pause, rate pacing goes on from the pause's end instead of catching up on the I/O the pause cost (0 or 1)",
        |j, v| {
            j.rate_ignore_thinktime = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "bwavgtime",
        [],
        None,
        "milliseconds each bandwidth sample averages over (bw min/max/mean/samples in the report; default 500)",
        |j, v| {
            j.bw_avg_time = Nanos::from_ms(int_in(v, 1, 86_400_000)? as u64);
            Ok(())
        }
    ),
    opt!(
        "iopsavgtime",
        [],
        None,
        "milliseconds each IOPS sample averages over (iops min/max/mean/samples in the report; default 500)",
        |j, v| {
            j.iops_avg_time = Nanos::from_ms(int_in(v, 1, 86_400_000)? as u64);
            Ok(())
        }
    ),
    opt!(
        "flow",
        [],
        None,
        "weight among the jobs of its flow_id (0-1000): they issue I/Os in proportion to their weights (0: no flow control; a negative value, older fio's signed counter, is taken as fio 3.33 takes it, see docs/job-files.md)",
        |j, v| {
            // fio 3.33 checks only the upper bound and stores the value in an unsigned
            // int, so -2 (older fio's syntax, still in its examples) is the weight 2^32-2
            let weight = int_in(v, i64::from(i32::MIN), i64::from(i32::MAX))?;
            if weight > 1000 {
                return Err(format!("{weight} is out of range 0..=1000"));
            }
            j.flow = weight as u32;
            Ok(())
        }
    ),
    opt!("flow_id", [], None, "the flow group the job's flow weight counts in (default 0)", |j, v| {
        j.flow_id = int_in(v, 0, i64::from(u32::MAX))? as u32;
        Ok(())
    }),
    opt!(
        "flow_sleep",
        [],
        None,
        "held back by flow, let the I/Os out complete and sleep this long before looking again; microseconds unless a unit is given (0: go on as soon as another job of the group issues)",
        |j, v| {
            j.flow_sleep = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!(
        "latency_target",
        [],
        None,
        "search for the highest depth (up to iodepth) whose requests meet this latency, issue to completion; microseconds unless a unit is given",
        |j, v| {
            j.latency.target = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!("latency_window", [], None, "how long latency_target tries each depth; microseconds unless a unit is given", |j, v| {
        j.latency.window = parse_time(v, Nanos::from_us(1))?;
        Ok(())
    }),
    opt!(
        "latency_percentile",
        [],
        None,
        "the share of requests (%) that must meet latency_target in a window (default 100; fio reads the first of a:b)",
        |j, v| {
            let first = v.split(':').next().unwrap_or(v).trim();
            let p: f64 = first.parse().map_err(|_| format!("'{first}' is not a number"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("percentile {first} is out of range [0, 100]"));
            }
            j.latency.percentile = p;
            Ok(())
        }
    ),
    opt!(
        "latency_run",
        [],
        Some("1"),
        "with latency_target: keep adjusting the depth all run instead of stopping once one holds",
        |j, v| {
            j.latency.keep_running = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "max_latency",
        [],
        None,
        "fail the job (error 110, ETIMEDOUT) when a request takes longer, issue to completion; microseconds unless a unit is given",
        |j, v| {
            j.max_latency = parse_time(v, Nanos::from_us(1))?;
            Ok(())
        }
    ),
    opt!(
        "steadystate",
        ["ss"],
        None,
        "METRIC[:LIMIT[%]], METRIC one of iops, iops_slope, bw, bw_slope (default iops_slope:0.01%): with ss_dur, end the job once the last ss_dur one-second samples meet it",
        |j, v| j.steadystate.set_criterion(v)
    ),
    opt!(
        "steadystate_duration",
        ["ss_dur"],
        None,
        "how many seconds of samples steadystate judges (whole seconds; seconds unless a unit is given); 0: no detection",
        |j, v| {
            let d = parse_time(v, Nanos::from_secs(1))?;
            if d > Nanos::ZERO && d < Nanos::from_secs(1) {
                return Err("must be at least one second (samples are one second each)".to_string());
            }
            j.steadystate.duration_s = u32::try_from(d.0 / 1_000_000_000).map_err(|_| "too long".to_string())?;
            Ok(())
        }
    ),
    opt!(
        "steadystate_ramp_time",
        ["ss_ramp"],
        None,
        "steadystate sampling starts one second after this, seconds unless a unit is given",
        |j, v| {
            j.steadystate.ramp = parse_time(v, Nanos::from_secs(1))?;
            Ok(())
        }
    ),
    opt!(
        "zonemode",
        [],
        None,
        "none (default) or strided: I/O stays in a zone of zonerange bytes for zonesize bytes, then skips zoneskip",
        |j, v| {
            j.zones.strided = match v {
                "none" => false,
                "strided" => true,
                "zbd" => return Err("zoned block devices (zbd) are not modelled; accepted: none, strided".to_string()),
                other => return Err(format!("'{other}' is not one of none, strided")),
            };
            Ok(())
        }
    ),
    opt!("zonesize", [], None, "zonemode=strided: bytes transferred in a zone before moving on", |j, v| {
        j.zones.size = parse_size(v, j.kb_base)?;
        Ok(())
    }),
    opt!("zonerange", [], None, "zonemode=strided: the length of a zone (default zonesize)", |j, v| {
        j.zones.range = parse_size(v, j.kb_base)?;
        Ok(())
    }),
    opt!("zoneskip", [], None, "zonemode=strided: bytes skipped after each zone", |j, v| {
        j.zones.skip = parse_size(v, j.kb_base)?;
        Ok(())
    }),
    opt!(
        "thinktime_blocks_type",
        [],
        None,
        "complete (fio's default): a pause comes once thinktime_blocks I/Os have completed since the last; issue: once that many were issued",
        |j, v| {
            j.thinktime_counts = match v {
                "complete" => ThinktimeCounts::Completed,
                "issue" => ThinktimeCounts::Issued,
                other => return Err(format!("'{other}' is not one of complete, issue")),
            };
            Ok(())
        }
    ),
    opt!("write_lat_log", [], Some(""), "log each I/O's latency: PREFIX_lat|clat|slat.N.log (bare: the job's name)", |j, v| {
        j.logs.lat = Some(v.to_string());
        Ok(())
    }),
    opt!("write_bw_log", [], Some(""), "log each I/O's bandwidth (KB/s): PREFIX_bw.N.log (bare: the job's name)", |j, v| {
        j.logs.bw = Some(v.to_string());
        Ok(())
    }),
    opt!("write_iops_log", [], Some(""), "log each I/O (IOPS): PREFIX_iops.N.log (bare: the job's name)", |j, v| {
        j.logs.iops = Some(v.to_string());
        Ok(())
    }),
    opt!(
        "write_hist_log",
        [],
        Some(""),
        "log completion-latency histograms every log_hist_msec: PREFIX_clat_hist.N.log, fio's format for fiologparser_hist.py (bare: the job's name)",
        |j, v| {
            j.logs.hist = Some(v.to_string());
            Ok(())
        }
    ),
    opt!("log_hist_msec", [], None, "ms between the histogram samples of write_hist_log", |j, v| {
        j.logs.hist_msec = int_in(v, 0, i64::from(u32::MAX))? as u32;
        Ok(())
    }),
    opt!(
        "log_hist_coarseness",
        [],
        None,
        "0-6: each column of write_hist_log sums 2^N of fio's 1856 buckets (1856, 928, ... 29 columns)",
        |j, v| {
            j.logs.hist_coarseness = int_in(v, 0, 6)? as u8;
            Ok(())
        }
    ),
    opt!("log_avg_msec", [], None, "log one line per window of this many ms and direction: the mean (0: every I/O)", |j, v| {
        j.logs.avg_msec = int_in(v, 0, i64::from(u32::MAX))? as u32;
        Ok(())
    }),
    opt!(
        "per_job_logs",
        [],
        Some("1"),
        "0: log files are named without the job number (PREFIX_bw.log) and every job appends its lines to them when it finishes, as fio does (default 1)",
        |j, v| {
            j.logs.per_job = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_max_value",
        [],
        Some("1"),
        "with log_avg_msec, latency logs hold each window's largest latency instead of its mean (0 or 1; bandwidth and IOPS logs keep the window's rate)",
        |j, v| {
            j.logs.max_value = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_unix_epoch",
        [],
        Some("1"),
        "log times are Unix times in milliseconds (in simulation counted from the report's time of day, which SOURCE_DATE_EPOCH sets)",
        |j, v| {
            j.logs.unix_epoch = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_alternate_epoch",
        [],
        Some("1"),
        "log times are those of the clock log_alternate_epoch_clock_id names, in milliseconds (wins over log_unix_epoch; in simulation only CLOCK_REALTIME, 0, has a time of day)",
        |j, v| {
            j.log_alternate_epoch = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "log_alternate_epoch_clock_id",
        [],
        None,
        "clock_gettime clock of log_alternate_epoch: 0 CLOCK_REALTIME (default), 1 CLOCK_MONOTONIC, 7 CLOCK_BOOTTIME, ...",
        |j, v| {
            j.log_alternate_clock_id = int_in(v, 0, 15)? as i32;
            Ok(())
        }
    ),
    opt!("log_offset", [], Some("1"), "add each I/O's offset to the log lines (0 or 1)", |j, v| {
        j.logs.offset = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "log_prio",
        [],
        Some("1"),
        "the last column of the log lines is each I/O's priority value, as 0x2004 (class << 13 | level), not 0/1 for cmdprio's (0 or 1)",
        |j, v| {
            j.logs.prio = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("number_ios", [], None, "I/Os per loop, if no other limit comes first (0: none; a time_based job runs its runtime)", |j, v| {
        j.number_ios = parse_int_in(v, 0, i64::MAX)? as u64;
        Ok(())
    }),
    opt!("loops", [], None, "run the job's I/O this many times over (not with time_based)", |j, v| {
        j.loops = int_in(v, 1, i64::from(u32::MAX))? as u32;
        Ok(())
    }),
    opt!("rate", [], None, "bandwidth cap in bytes/s per clone: read[,write[,trim]] (not with rate_iops, as in fio)", |j, v| {
        let kb = j.kb_base;
        let rates = per_direction(v, |s| parse_size(s, kb))?;
        apply_per_direction(&mut j.rate_bps, rates, 0);
        Ok(())
    }),
    opt!(
        "rate_min",
        ["ratemin"],
        None,
        "fail the job (error 5, EIO) when its bandwidth in bytes/s falls below this over a rate_cycle: read[,write[,trim]]",
        |j, v| {
            let kb = j.kb_base;
            let rates = per_direction(v, |s| parse_size(s, kb))?;
            apply_per_direction(&mut j.rate_min_bps, rates, 0);
            Ok(())
        }
    ),
    opt!(
        "rate_iops_min",
        [],
        None,
        "fail the job (error 5, EIO) when its IOPS fall below this over a rate_cycle: read[,write[,trim]]",
        |j, v| {
            let rates = per_direction(v, |s| parse_int_in(s, 0, i64::MAX).map(|v| v as u64))?;
            apply_per_direction(&mut j.rate_iops_min, rates, 0);
            Ok(())
        }
    ),
    opt!("rate_cycle", ["ratecycle"], None, "the window rate_min and rate_iops_min are judged over, ms (default 1000)", |j, v| {
        j.rate_cycle = Nanos::from_ms(parse_int_in(v, 1, i64::from(u32::MAX))? as u64);
        Ok(())
    }),
    opt!("rate_iops", [], None, "IOPS cap per clone: read[,write[,trim]]; paced by bytes at the smallest block, as fio paces it (a 16k I/O of a 4k-16k job takes four turns)", |j, v| {
        let rates = per_direction(v, |s| parse_int_in(s, 0, i64::MAX).map(|v| v as u64))?;
        apply_per_direction(&mut j.rate_iops, rates, 0);
        Ok(())
    }),
    opt!("rate_process", [], None, "linear (fixed gaps) or poisson (exponential gaps, of mean one smallest block's time)", |j, v| {
        j.rate_process = match v {
            "linear" => RateProcess::Linear,
            "poisson" => RateProcess::Poisson,
            other => return Err(format!("'{other}' is not a rate process; accepted: linear, poisson")),
        };
        Ok(())
    }),
    opt!("prio", [], None, "I/O priority level 0..=7 (0 is highest)", |j, v| {
        j.prio = Some(int_in(v, 0, 7)? as u8);
        Ok(())
    }),
    opt!("prioclass", [], None, "I/O priority class: 0 none, 1 real-time, 2 best-effort, 3 idle", |j, v| {
        j.prioclass = Some(int_in(v, 0, 3)? as u8);
        Ok(())
    }),
    opt!(
        "cmdprio_percentage",
        [],
        None,
        "io_uring/libaio: % of I/Os issued with cmdprio_class/cmdprio: all[,write] or read,write",
        |j, v| cmdprio_pair(&mut j.cmdprio_pct, v, 0, 100)
    ),
    opt!(
        "cmdprio_class",
        [],
        None,
        "class of cmdprio_percentage's I/Os: 1 real-time (default), 2 best-effort, 3 idle; read[,write]",
        |j, v| cmdprio_pair(&mut j.cmdprio_class, v, 1, 3)
    ),
    opt!(
        "cmdprio_bssplit",
        [],
        None,
        "io_uring/libaio: per block size, the % of I/Os sent at another priority: bs/pct[/class/level]:...[,write] (without class/level: cmdprio_class/cmdprio)",
        |j, v| {
            let kb = j.kb_base;
            if v.split(',').count() > 2 {
                return Err(format!("'{v}' has more than two comma-separated lists (read,write)"));
            }
            let lists = per_direction(v, |list| parse_cmdprio_bssplit(list, kb))?;
            for (slot, list) in j.cmdprio_bssplit.iter_mut().zip(lists) {
                *slot = list.unwrap_or_default();
            }
            Ok(())
        }
    ),
    opt!("cmdprio", [], None, "level 0..=7 of cmdprio_percentage's I/Os (default 0); read[,write]", |j, v| {
        cmdprio_pair(&mut j.cmdprio_level, v, 0, 7)
    }),
    opt!("nice", [], None, "CPU nice value -20..=19", |j, v| {
        j.nice = int_in(v, -20, 19)? as i8;
        Ok(())
    }),
    opt!("cgroup", [], None, "cgroup (tenant) path, a/b for b below a; jobs naming the same cgroup share it", |j, v| {
        // fio makes the directory below the mount point: leading, trailing and doubled
        // slashes name the same cgroup
        let path: Vec<&str> = v.split('/').filter(|part| !part.is_empty()).collect();
        if path.is_empty() {
            return Err("cgroup name must not be empty".into());
        }
        j.cgroup = Some(path.join("/"));
        Ok(())
    }),
    opt!("cgroup_weight", [], None, "weight of the job's cgroup, 100..=1000", |j, v| {
        j.cgroup_weight = int_in(v, 100, 1000)? as u32;
        Ok(())
    }),
    opt!(
        "cgroup_io_latency",
        [],
        None,
        "nvsched: the io.latency target of the job's cgroup (cgroup v2's io.latency target=), which policy iolatency keeps; microseconds unless a unit is given",
        |j, v| {
            let target = parse_time(v, Nanos::from_us(1))?;
            if target == Nanos::ZERO {
                return Err("the target must be above 0 (leave the option out for none)".into());
            }
            j.cgroup_io_latency = Some(target);
            Ok(())
        }
    ),
    opt!("stonewall", ["wait_for_previous"], Some("1"), "wait for earlier jobs to finish; starts a new group", |j, v| {
        j.stonewall = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "wait_for",
        [],
        None,
        "start only once every clone of this earlier job (by name) has finished; unlike stonewall, no new group",
        |j, v| {
            if v.trim().is_empty() {
                return Err("wait_for needs the name of an earlier job".into());
            }
            j.wait_for = Some(v.trim().to_string());
            Ok(())
        }
    ),
    opt!("exitall", [], Some("1"), "when this job finishes, stop the jobs exit_what names", |j, v| {
        j.exitall = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "exitall_on_error",
        [],
        Some("1"),
        "when this job fails (max_latency, latency_target, rate_min), stop every running job; later stonewall groups still run, as in fio (0 or 1)",
        |j, v| {
            j.exitall_on_error = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "exit_what",
        [],
        None,
        "what exitall stops: group (default), stonewall (all running jobs) or all (later groups too)",
        |j, v| {
            j.exit_what = match v {
                "group" => ExitWhat::Group,
                "stonewall" => ExitWhat::Stonewall,
                "all" => ExitWhat::All,
                other => return Err(format!("'{other}' is not an exit_what; accepted: group, stonewall, all")),
            };
            Ok(())
        }
    ),
    opt!("new_group", [], Some("1"), "start a new reporting group without waiting", |j, v| {
        j.new_group = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "unified_rw_reporting",
        [],
        Some("1"),
        "none (0): reads, writes and trims apart; mixed (1): together as one \"mixed\" direction; both (2): apart, then mixed",
        |j, v| {
            j.unified_rw_reporting = match v {
                "none" | "0" => UnifiedRw::None,
                "mixed" | "1" => UnifiedRw::Mixed,
                "both" | "2" => UnifiedRw::Both,
                other => {
                    return Err(format!(
                        "'{other}' is not a unified_rw_reporting mode; accepted: none, 0, mixed, 1, both, 2"
                    ))
                }
            };
            Ok(())
        }
    ),
    opt!(
        "stats",
        [],
        Some("1"),
        "0: the job runs but is left out of the report, as fio leaves it out (e.g. a fill before the measured jobs)",
        |j, v| {
            j.stats = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("group_reporting", [], Some("1"), "report each group as one job", |j, v| {
        j.group_reporting = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "percentile_list",
        [],
        None,
        "completion-latency percentiles, a:b:c (at most 20, each in (0, 100])",
        |j, v| {
            let mut list = Vec::new();
            let mut precision = 0;
            for part in v.split(':') {
                let p: f64 = part.trim().parse().map_err(|_| format!("'{part}' is not a number"))?;
                let decimals = part.trim().split_once('.').map_or(0, |(_, frac)| frac.len());
                precision = precision.max(decimals.min(usize::from(u8::MAX)) as u8);
                if !(p > 0.0 && p <= 100.0) {
                    return Err(format!("percentile {part} is out of range (0, 100]"));
                }
                list.push(p);
            }
            if list.len() > 20 {
                return Err(format!("{} percentiles given; at most 20", list.len()));
            }
            list.sort_by(f64::total_cmp);
            j.percentile_list = list;
            j.percentile_precision = precision;
            Ok(())
        }
    ),
    opt!("clat_percentiles", [], Some("1"), "report completion-latency percentiles (default 1)", |j, v| {
        j.clat_percentiles = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "lat_percentiles",
        [],
        Some("1"),
        "report total-latency percentiles; per-priority entries then measure total latency",
        |j, v| {
            j.lat_percentiles = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("slat_percentiles", [], Some("1"), "report submission-latency percentiles (asynchronous engines)", |j, v| {
        j.slat_percentiles = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "random_distribution",
        [],
        None,
        "random, zipf:THETA[:CENTER], pareto:H[:CENTER], normal:DEV%[:CENTER], zoned:A%/S%:..., zoned_abs:A%/BYTES:...",
        |j, v| {
            j.distribution = parse_distribution(v, j.kb_base)?;
            Ok(())
        }
    ),
    opt!(
        "random_generator",
        [],
        None,
        "tausworthe, lfsr or tausworthe64: accepted; nvsched draws offsets from its own seeded generator (each block once per pass unless norandommap, as fio's do)",
        |_, v| match v {
            "tausworthe" | "lfsr" | "tausworthe64" => Ok(()),
            other => Err(format!("'{other}' is not one of tausworthe, lfsr, tausworthe64")),
        }
    ),
    opt!("norandommap", [], Some("1"), "draw random offsets independently (repeats allowed)", |j, v| {
        j.norandommap = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "percentage_random",
        [],
        None,
        "% of a random pattern's offsets drawn at random, read[,write[,trim]] (default 100); the others follow on from the previous I/O",
        |j, v| {
            let pcts = per_direction(v, |s| int_in(s, 0, 100).map(|p| p as u8))?;
            apply_per_direction(&mut j.percentage_random, pcts, 100);
            Ok(())
        }
    ),
    opt!("randseed", [], None, "seed of the job's random generators", |j, v| {
        j.randseed = parse_int_in(v, 0, i64::MAX)? as u64;
        Ok(())
    }),
    opt!(
        "randrepeat",
        ["allrandrepeat"],
        Some("1"),
        "1: seeds follow randseed; 0: seeds also mix in the run's --seed",
        |j, v| {
            j.randrepeat = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("kb_base", [], None, "1024 (k = 1024, kib = 1000, fio's default) or 1000 (the reverse)", |j, v| {
        j.kb_base = match v {
            "1024" => KbBase::Binary,
            "1000" => KbBase::Decimal,
            other => return Err(format!("'{other}' is not a kb_base; accepted: 1000, 1024")),
        };
        Ok(())
    }),
    opt!(
        "io_submit_mode",
        [],
        None,
        "inline or offload: accepted; nvsched's engines issue rate-paced I/O on time whenever iodepth allows, as fio's offload does",
        |_, v| one_of(v, &["inline", "offload"])
    ),
    opt!(
        "unlink",
        [],
        Some("1"),
        "1: the job's regular files are removed when it finishes, as in fio: a job that starts after that and writes makes the file anew, empty (a read past what was written since gets nothing: a synchronous engine fails the job with EIO, 'full resid'; an asynchronous one goes on); one that only reads (or trims) fails with ENOENT before any I/O. On real devices a file nvsched did not create is removed only with --allow-destructive",
        |j, v| {
            j.unlink = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "thread",
        ["threads"],
        Some("1"),
        "clones are threads, not processes (0 or 1): only the normal output's 'Starting' line shows it",
        |j, v| {
            j.thread = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "gtod_reduce",
        [],
        Some("1"),
        "accepted: nvsched times every I/O at no cost to the run (simulated time; two clock reads per I/O on real devices) and reports every latency, where fio leaves them out",
        accept_bool
    ),
    opt!("disable_lat", [], Some("1"), "accepted: total latency is measured and reported anyway (see gtod_reduce)", accept_bool),
    opt!("disable_clat", [], Some("1"), "accepted: completion latency is measured and reported anyway (see gtod_reduce)", accept_bool),
    opt!("disable_slat", [], Some("1"), "accepted: submission latency is measured and reported anyway (see gtod_reduce)", accept_bool),
    opt!(
        "disable_bw_measurement",
        ["disable_bw"],
        Some("1"),
        "accepted: bandwidth is measured and reported anyway (see gtod_reduce)",
        accept_bool
    ),
    opt!(
        "clocksource",
        [],
        None,
        "gettimeofday, clock_gettime or cpu: accepted; nvsched's clock is simulated time, or the monotonic clock on real devices",
        |_, v| one_of(v, &["gettimeofday", "clock_gettime", "cpu"])
    ),
    opt!(
        "invalidate",
        [],
        Some("1"),
        "drop the files' pages from the page cache before the run (posix_fadvise DONTNEED; on by default, as in fio): what laying out a file left there would otherwise make direct writes invalidate it as they go (real devices; the simulator has no page cache)",
        |j, v| {
            j.invalidate = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "fallocate",
        [],
        None,
        "none, native, posix, keep or truncate (or 0/1): a file a job only allocates has its full size, or none with none, 0 or keep, so the next job on it writes it out if that job reads (in simulation; on real devices nvsched allocates such a file with fallocate either way)",
        |j, v| {
            one_of(v, &["none", "native", "posix", "keep", "truncate", "0", "1"])?;
            j.fallocate_sizes_file = !["none", "0", "keep"].contains(&v);
            Ok(())
        }
    ),
    opt!("create_serialize", [], Some("1"), "accepted: nvsched lays out its files one after another before any job starts", accept_bool),
    opt!(
        "overwrite",
        [],
        Some("1"),
        "1: a job that only writes finds its new file laid out with data, as one that reads does; 0 (fio's default): it finds the file without data (fio only allocates it), so the simulated drive holds nothing there until written, a buffered write of part of a page it has not written does not read the page in the simulated page cache, and on real devices nvsched only allocates the file",
        |j, v| {
            j.overwrite = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "allow_mounted_write",
        [],
        Some("1"),
        "accepted, but nvsched refuses to write to a mounted block device whatever this says",
        accept_bool
    ),
    opt!(
        "softrandommap",
        [],
        Some("1"),
        "accepted: nvsched's random map (a keyed permutation) needs no memory and cannot fail to allocate",
        accept_bool
    ),
    opt!(
        "openfiles",
        [],
        None,
        "files of a job open at once: I/O goes round them, the next opening when one is done",
        |j, v| {
            j.openfiles = int_in(v, 1, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "file_service_type",
        [],
        None,
        "how a clone with several files picks the next: roundrobin[:N] (the default: the next file after N I/Os, 1 by default), sequential (each file to its end in turn), random[:N] (a file at random after N I/Os), or zipf[:THETA], pareto[:H], normal[:DEV] (gauss) with an optional :CENTER (each I/O's file drawn from that distribution, as random_distribution draws offsets)",
        |j, v| {
            let kind = v.split(':').next().unwrap_or(v);
            if matches!(kind, "zipf" | "pareto" | "normal" | "gauss") {
                // fio's defaults and ':CENTER' as random_distribution takes them
                j.file_service = FileService::Skewed(parse_distribution(v, j.kb_base)?);
                return Ok(());
            }
            let n = match v.split_once(':') {
                Some((_, n)) => Some(int_in(n, 1, i64::from(u32::MAX))? as u32),
                None => None,
            };
            j.file_service = match kind {
                "roundrobin" => FileService::RoundRobin(n.unwrap_or(1)),
                "random" => FileService::Random(n.unwrap_or(1)),
                "sequential" if n.is_none() => FileService::Sequential,
                "sequential" => return Err("sequential takes no ':N'".into()),
                other => {
                    return Err(format!("'{other}' is not one of roundrobin, sequential, random, zipf, pareto, normal, gauss"))
                }
            };
            Ok(())
        }
    ),
    opt!(
        "pre_read",
        [],
        Some("1"),
        "accepted: there is no page cache to fill (direct I/O on real devices)",
        accept_bool
    ),
    opt!("lockmem", [], None, "accepted: nvsched's I/O buffers are small and not locked", |j, v| {
        parse_size(v, j.kb_base).map(|_| ())
    }),
    opt!(
        "iomem",
        ["mem"],
        None,
        "malloc, shm, shmhuge, mmap, mmaphuge, mmapshared or cudamalloc: accepted; nvsched's buffers are page-aligned heap memory",
        |_, v| {
            let kind = v.split(':').next().unwrap_or(v);
            one_of(kind, &["malloc", "shm", "shmhuge", "mmap", "mmaphuge", "mmapshared", "cudamalloc"])
        }
    ),
    opt!(
        "iomem_align",
        ["mem_align"],
        None,
        "accepted for values up to 4096: nvsched's buffers are aligned to 4096 bytes",
        |j, v| {
            let align = parse_size(v, j.kb_base)?;
            if align > 4096 {
                return Err(format!("{align}: nvsched's buffers are aligned to 4096 bytes, not more"));
            }
            Ok(())
        }
    ),
    opt!(
        "disk_util",
        [],
        Some("1"),
        "accepted: nvsched reports no disk utilisation section (the simulated device has no block-layer counters)",
        accept_bool
    ),
    opt!(
        "cpus_allowed",
        ["cpumask", "numa_cpu_nodes"],
        None,
        "accepted: nvsched runs every job in one thread (real devices) or models host CPUs with host.cpus (simulator), so there is nothing to pin",
        |_, _| Ok(())
    ),
    opt!(
        "cpus_allowed_policy",
        [],
        None,
        "shared or split: accepted, see cpus_allowed",
        |_, v| one_of(v, &["shared", "split"])
    ),
    opt!("numa_mem_policy", [], None, "accepted: nvsched's buffers are ordinary heap memory", |_, _| Ok(())),
    opt!("gtod_cpu", [], None, "accepted: nvsched keeps no timing thread (see gtod_reduce)", |_, v| {
        int_in(v, 0, 1 << 20).map(|_| ())
    }),
    opt!(
        "log_entries",
        [],
        None,
        "accepted: nvsched's logs need no preallocated entries",
        |_, v| int_in(v, 1, i64::MAX).map(|_| ())
    ),
    opt!(
        "log_compression",
        [],
        None,
        "accepted: nvsched keeps its logs in files, not compressed in memory",
        |j, v| parse_size(v, j.kb_base).map(|_| ())
    ),
    opt!(
        "create_fsync",
        [],
        Some("1"),
        "accepted: nvsched always syncs a file it lays out before the jobs start",
        accept_bool
    ),
    opt!(
        "unique_filename",
        [],
        Some("1"),
        "accepted: for fio's client/server mode, which nvsched has not",
        accept_bool
    ),
    opt!(
        "significant_figures",
        [],
        None,
        "significant figures of IOPS, bandwidth and sizes in the normal output, 1-10 (default 4)",
        |j, v| {
            j.significant_figures = int_in(v, 1, 10)? as u8;
            Ok(())
        }
    ),
    opt!(
        "unit_base",
        [],
        None,
        "0 or 8: bandwidth in bytes; 1: the normal output's bandwidth (BW= and the group line's bw=) in bits per second, as fio prints it (amounts, samples, JSON and terse stay in bytes)",
        |j, v| {
            j.bandwidth_in_bits = match v {
                "0" | "8" => false,
                "1" => true,
                other => return Err(format!("'{other}' is not one of 0, 8, 1")),
            };
            Ok(())
        }
    ),
    opt!(
        "fixedbufs",
        [],
        Some("1"),
        "accepted: nvsched's ring does not register its buffers (an overhead saving, not a behaviour)",
        accept_bool
    ),
    opt!(
        "registerfiles",
        [],
        Some("1"),
        "accepted: nvsched's ring does not register its files (an overhead saving, not a behaviour)",
        accept_bool
    ),
    opt!(
        "nonvectored",
        [],
        Some("1"),
        "accepted: nvsched's io_uring engine issues plain read and write requests for single buffers either way",
        |_, v| int_in(v, -1, 1).map(|_| ())
    ),
    opt!(
        "uncached",
        [],
        Some("1"),
        "accepted: I/O is direct, so there is no page cache to bypass",
        |_, v| int_in(v, 0, i64::from(u32::MAX)).map(|_| ())
    ),
    opt!(
        "userspace_reap",
        [],
        Some("1"),
        "accepted: how completions are reaped is nvsched's own (the io-uring crate's completion queue)",
        accept_bool
    ),
    opt!(
        "hugepage-size",
        [],
        None,
        "accepted: nvsched's buffers are page-aligned heap memory, not huge pages",
        |j, v| parse_size(v, j.kb_base).map(|_| ())
    ),
    opt!(
        "read_iolog_chunked",
        [],
        Some("1"),
        "accepted: nvsched reads a trace into memory as it parses the job file (a memory saving in fio, not a behaviour)",
        accept_bool
    ),
    opt!(
        "create_on_open",
        [],
        Some("1"),
        "accepted: nvsched lays out new files before any job starts, outside the jobs' time",
        accept_bool
    ),
    opt!(
        "fadvise_hint",
        [],
        Some("1"),
        "accepted: I/O is direct, so page-cache advice has no effect",
        |_, v| one_of(v, &["0", "1", "sequential", "random"])
    ),
    opt!(
        "unlink_each_loop",
        [],
        Some("1"),
        "accepted: on real devices nvsched removes the files it laid out after the run unless --keep-files, whatever this says",
        accept_bool
    ),
    opt!(
        "lockfile",
        [],
        None,
        "jobs sharing a file take turns on it: none, exclusive (one I/O at a time) or readwrite (reads share, writes alone); as in fio, only synchronous engines' I/O holds the lock until it completes",
        |j, v| {
            j.lockfile = LockMode::parse(v)?;
            Ok(())
        }
    ),
    opt!(
        "cgroup_nodelete",
        [],
        Some("1"),
        "accepted: nvsched creates no cgroups (cgroup= names a tenant of the policy)",
        accept_bool
    ),
    opt!(
        "log_compression_cpus",
        [],
        None,
        "accepted: nvsched does not compress its logs",
        |_, v| non_empty(v, "log_compression_cpus needs a CPU list").map(|_| ())
    ),
    opt!(
        "log_store_compressed",
        [],
        Some("1"),
        "0: logs are plain text (1, fio's compressed .fz logs, is not supported)",
        |_, v| match parse_bool(v)? {
            false => Ok(()),
            true => Err("compressed logs are not supported; nvsched writes plain-text logs".into()),
        }
    ),
    opt!(
        "error_dump",
        [],
        Some("1"),
        "accepted: a failed I/O's error names its file, offset and length either way",
        accept_bool
    ),
    opt!(
        "verify_dump",
        [],
        Some("1"),
        "accepted: a verify failure names the block's offset and what is wrong with it; nvsched writes no dump files",
        accept_bool
    ),
    opt!(
        "verify_async",
        [],
        None,
        "accepted: a job's read-back goes out at its depth through the policy and each read is checked as it completes, in nvsched's one thread",
        |_, v| int_in(v, 0, 1024).map(|_| ())
    ),
    opt!(
        "verify_async_cpus",
        [],
        None,
        "accepted: nvsched checks read-backs in its one thread, so there are no verify threads to pin",
        |_, _| Ok(())
    ),
    opt!(
        "verify_state_save",
        [],
        Some("1"),
        "accepted: nvsched keeps no verify state (verify_only checks each block's own header)",
        accept_bool
    ),
    opt!(
        "experimental_verify",
        [],
        Some("1"),
        "accepted: nvsched verifies the blocks it recorded as written either way",
        accept_bool
    ),
    opt!(
        "verify",
        [],
        None,
        "written blocks carry a checksummed header, read back and checked (uring engine): crc32c; fio's other checksums (md5, sha256, xxhash, crc64, ..., meta) are checked with crc32c, as nvsched's header is its own; null: read back without headers or checks, as fio pretends",
        |j, v| {
            j.verify = match v {
                "0" | "none" => false,
                _ if VERIFY_CHECKSUMS.contains(&v) => true,
                "pattern" | "null" => true,
                other => {
                    return Err(format!(
                        "'{other}' is not a verify method nvsched takes; accepted: none, pattern, null, {}",
                        VERIFY_CHECKSUMS.join(", ")
                    ))
                }
            };
            j.verify_format.pattern_only = v == "pattern";
            j.verify_format.pretend = v == "null";
            Ok(())
        }
    ),
    opt!(
        "continue_on_error",
        [],
        None,
        "none, read, write, io, verify or all (0/1): a failed I/O of that kind with a non-fatal error (EIO, EILSEQ, or those ignore_error lists) is counted and the job goes on; otherwise it fails the job (real devices; with verify, a bad block is counted and the job goes on, where it would fail the job with EILSEQ; the run still exits 1 on a mismatch)",
        |j, v| {
            j.on_error.continue_on = crate::errors::parse_continue_on(v)?;
            Ok(())
        }
    ),
    opt!(
        "ignore_error",
        [],
        None,
        "errors continue_on_error treats as non-fatal besides EIO and EILSEQ: read_list,write_list,verify_list, each ':'-separated names (ENOSPC) or numbers",
        |j, v| {
            j.on_error.ignore = crate::errors::parse_ignore_lists(v)?;
            Ok(())
        }
    ),
    opt!(
        "zero_buffers",
        [],
        Some("1"),
        "writes carry zeros instead of random data (real devices; the simulated drives store no data, so content changes nothing there)",
        |j, v| {
            j.buffers.zero = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "refill_buffers",
        [],
        Some("1"),
        "fresh content for every write, not a buffer filled once and reused (real devices; implied by buffer_compress_percentage and dedupe_percentage)",
        |j, v| {
            j.buffers.refill = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "scramble_buffers",
        [],
        Some("1"),
        "a reused buffer gets the write's offset and time in each 512-byte sector, so no two writes are identical (default 1; real devices)",
        |j, v| {
            j.buffers.scramble = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "buffer_pattern",
        [],
        None,
        "bytes repeated over each write buffer: 0x-prefixed hex, a decimal number (little-endian) or a quoted string, concatenated (real devices)",
        |j, v| {
            j.buffers.pattern = crate::buffers::parse_pattern(v)?;
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_percentage",
        [],
        None,
        "% of each buffer_compress_chunk that is zeros (or buffer_pattern), the rest random, so a compressing drive shrinks writes to about that level (real devices)",
        |j, v| {
            j.buffers.compress_percentage = int_in(v, 0, 100)? as u8;
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_chunk",
        [],
        None,
        "the piece buffer_compress_percentage and dedupe_percentage work on (default: the smallest write block)",
        |j, v| {
            let bytes = parse_size(v, j.kb_base)?;
            j.buffers.compress_chunk_bytes = u32::try_from(bytes).map_err(|_| format!("{bytes} bytes is too large a chunk"))?;
            Ok(())
        }
    ),
    opt!(
        "dedupe_mode",
        [],
        None,
        "repeat (the default): a repeated piece repeats the last new one; working_set is not supported",
        |_, v| match v {
            "repeat" => Ok(()),
            "working_set" => Err("dedupe_mode=working_set is not supported; repeat is".into()),
            other => Err(format!("'{other}' is not one of repeat, working_set")),
        }
    ),
    opt!(
        "dedupe_percentage",
        [],
        None,
        "% of written pieces that repeat an earlier one, so a deduplicating drive stores less (real devices)",
        |j, v| {
            j.buffers.dedupe_percentage = int_in(v, 0, 100)? as u8;
            Ok(())
        }
    ),
    opt!("do_verify", [], Some("1"), "read back and check after writing (with verify)", |j, v| {
        j.do_verify = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "verify_pattern",
        [],
        None,
        "what verified blocks hold after their headers (with verify=pattern, all they hold, checked byte by byte; without verify, it sets verify=pattern): 0x-prefixed hex, a decimal number or a quoted string, concatenated, as buffer_pattern",
        |j, v| {
            j.verify_format.pattern = crate::buffers::parse_pattern(v)?;
            Ok(())
        }
    ),
    opt!(
        "verify_interval",
        [],
        None,
        "bytes each verify header covers (at least 80, as in fio; at most the smallest write, which it is cut to; default: the whole block)",
        |j, v| {
            let bytes = parse_size(v, j.kb_base)?;
            if !(80..=u64::from(u32::MAX)).contains(&bytes) {
                return Err(format!("{bytes} is out of range (80 bytes or more, as fio takes it)"));
            }
            j.verify_format.interval = bytes as u32;
            Ok(())
        }
    ),
    opt!("verify_only", [], Some("1"), "only check the headers written by an earlier run (with verify)", |j, v| {
        j.verify_only = parse_bool(v)?;
        Ok(())
    }),
    opt!(
        "verify_fatal",
        [],
        Some("1"),
        "stop checking a job's blocks at its first bad one (with verify; by default every block is checked)",
        |j, v| {
            j.verify_fatal = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "verify_backlog",
        [],
        None,
        "with verify and do_verify: after every this many writes, let them land and read back the oldest blocks written (verify_backlog_batch of them), then go on; what is left is read back at the end of the pass",
        |j, v| {
            j.verify_backlog = int_in(v, 0, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "verify_backlog_batch",
        [],
        None,
        "blocks each verify_backlog read-back checks (default: verify_backlog); fewer leaves the rest to the end",
        |j, v| {
            j.verify_backlog_batch = int_in(v, 0, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "create_only",
        [],
        Some("1"),
        "lay out the job's files and issue no I/O; real devices keep the files it lays out (fio's setup phase only)",
        |j, v| {
            j.create_only = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "file_append",
        [],
        Some("1"),
        "work after the end of each file as the run finds it (a new file: from 0) for size bytes, growing it, whatever offset says; on real devices an existing file grows only with --allow-destructive",
        |j, v| {
            j.file_append = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "fill_device",
        ["fill_fs"],
        Some("1"),
        "write until the file system or device is full (ENOSPC ends the job without an error); without a size, the file takes the free space",
        |j, v| {
            j.fill_device = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "write_hint",
        [],
        None,
        "none, short, medium, long or extreme: the write lifetime hint set on the job's files (F_SET_RW_HINT), which the kernel passes to the device with each write (real devices)",
        |j, v| {
            j.write_hint = Some(match v {
                "none" => 1,
                "short" => 2,
                "medium" => 3,
                "long" => 4,
                "extreme" => 5,
                other => return Err(format!("'{other}' is not one of none, short, medium, long, extreme")),
            });
            Ok(())
        }
    ),
    opt!(
        "serialize_overlap",
        ["serialise_overlap"],
        Some("1"),
        "an I/O that overlaps one of the job's I/Os in flight waits until that one completes (jobs that write or trim with iodepth > 1), so reordering cannot change what lands last",
        |j, v| {
            j.serialize_overlap = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "exec_prerun",
        [],
        None,
        "shell command each clone runs as it starts (after the files are laid out, before its I/O), output in NAME.prerun.txt; a command that fails stops the run (real devices; the simulator skips it with a warning)",
        |j, v| {
            j.exec_prerun = Some(non_empty(v, "exec_prerun needs a command")?);
            Ok(())
        }
    ),
    opt!(
        "exec_postrun",
        [],
        None,
        "shell command each clone runs as it ends (after its I/O and verify), output in NAME.postrun.txt; its failure is reported, not fatal (real devices; the simulator skips it with a warning)",
        |j, v| {
            j.exec_postrun = Some(non_empty(v, "exec_postrun needs a command")?);
            Ok(())
        }
    ),
    opt!(
        "sqthread_poll",
        [],
        Some("1"),
        "io_uring: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL); real devices, where every job shares one ring, so set it for all jobs or none (the simulator's host model does not change)",
        |j, v| {
            j.sqthread_poll = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "force_async",
        [],
        None,
        "io_uring: every Nth request is handed to the kernel's async workers (IOSQE_ASYNC) instead of being tried inline first; 0: none (real devices; the simulator's host model does not change)",
        |j, v| {
            j.force_async = int_in(v, 0, i64::from(u32::MAX))? as u32;
            Ok(())
        }
    ),
    opt!(
        "nowait",
        [],
        Some("1"),
        "io_uring and pvsync2: reads and writes carry RWF_NOWAIT and fail with EAGAIN where they would have to wait (continue_on_error with EAGAIN in ignore_error's read or write list lets the job go on); real devices, a warning in simulation",
        |j, v| {
            j.nowait = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "sqthread_poll_cpu",
        [],
        None,
        "io_uring with sqthread_poll: the CPU the polling thread runs on",
        |j, v| {
            j.sqthread_poll_cpu = Some(int_in(v, 0, 4095)? as u32);
            Ok(())
        }
    ),
    opt!(
        "allow_file_create",
        [],
        Some("1"),
        "0: a job's file must exist (real devices); 1 (default): a missing file is laid out",
        |j, v| {
            j.allow_file_create = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "ioscheduler",
        [],
        None,
        "scheduling policy in front of the device (fio switches the kernel's scheduler): an ID of `nvsched policies` or ID:key=value,...; --sched overrides it",
        |j, v| {
            j.ioscheduler = Some(non_empty(v, "needs a policy, e.g. ioscheduler=mq-deadline (see `nvsched policies`)")?);
            Ok(())
        }
    ),
    opt!(
        "read_iolog",
        [],
        None,
        "replay this block trace (fio iolog v2/v3, DiskSim, SPC, MSR, Alibaba, Tencent, FIU, blkparse or ftrace text, or a blktrace binary); relative to the job file",
        |j, v| {
            j.replay.read_iolog = Some(non_empty(v, "read_iolog needs a trace file")?);
            Ok(())
        }
    ),
    opt!(
        "merge_blktrace_file",
        [],
        None,
        "merge the blktraces read_iolog names (separated by ':') into this file when the job starts, and replay it (relative to the working directory)",
        |j, v| {
            j.replay.merge_file = Some(non_empty(v, "merge_blktrace_file needs a file name")?);
            Ok(())
        }
    ),
    opt!(
        "merge_blktrace_scalars",
        [],
        None,
        "with merge_blktrace_file: per trace, the percentage its times are scaled by (':'-separated, one per trace; whole percent, as fio takes them)",
        |j, v| {
            j.replay.merge_scalars_pct = merge_list(v, "merge_blktrace_scalars", |x| x as u64)?;
            Ok(())
        }
    ),
    opt!(
        "merge_blktrace_iters",
        [],
        None,
        "with merge_blktrace_file: per trace, how many times it is laid end to end (':'-separated, one per trace)",
        |j, v| {
            j.replay.merge_iterations = merge_list(v, "merge_blktrace_iters", |x| x.min(f64::from(u32::MAX)) as u32)?;
            Ok(())
        }
    ),
    opt!(
        "write_iolog",
        [],
        None,
        "log the issued I/Os as fio's iolog (version 3; FILE.N per clone with numjobs), for read_iolog",
        |j, v| {
            j.write_iolog = Some(non_empty(v, "write_iolog needs a file name")?);
            Ok(())
        }
    ),
    opt!(
        "trace_format",
        [],
        None,
        "nvsched: the format of read_iolog's trace: auto, fio, disksim (ns), disksim-ms, spc, msr, alibaba, tencent, fiu, blktrace (binary), blkparse, ftrace",
        |j, v| {
            j.replay.format = TraceFormat::parse(v.trim())?;
            Ok(())
        }
    ),
    opt!("replay_no_stall", [], Some("1"), "replay as fast as iodepth allows, ignoring the trace's times", |j, v| {
        j.replay.no_stall = parse_bool(v)?;
        Ok(())
    }),
    opt!("replay_time_scale", [], None, "percent of the trace's pace: 200 replays twice as fast", |j, v| {
        j.replay.time_scale_pct = parse_int_in(v, 1, 1_000_000)? as u32;
        Ok(())
    }),
    opt!("replay_skip", [], None, "directions of the trace left out: read, write, trim, sync (a comma list)", |j, v| {
        let mut skip = [false; 4];
        for d in v.split(',').map(str::trim) {
            let op = match d {
                "read" => Op::Read,
                "write" => Op::Write,
                "trim" => Op::Discard,
                "sync" => Op::Flush,
                _ => return Err(format!("'{d}' is not a direction; accepted: read, write, trim, sync")),
            };
            skip[op.index()] = true;
        }
        j.replay.skip = skip;
        Ok(())
    }),
    opt!(
        "replay_ioprio",
        [],
        Some("1"),
        "nvsched: each replayed request keeps the I/O priority its trace gives it (ftrace's block_rq_* events)",
        |j, v| {
            j.replay.trace_ioprio = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!("replay_scale", [], None, "divide the trace's offsets by this (fio's replay_scale)", |j, v| {
        j.replay.offset_divisor = parse_int_in(v, 1, i64::from(u32::MAX))? as u64;
        Ok(())
    }),
    opt!("replay_align", [], None, "align the trace's offsets down to this many bytes (a multiple of 512)", |j, v| {
        let bytes = parse_size(v, j.kb_base)?;
        if bytes == 0 || bytes % 512 != 0 {
            return Err(format!("'{v}' is not a positive multiple of 512 bytes"));
        }
        j.replay.align_bytes = bytes;
        Ok(())
    }),
    opt!(
        "replay_redirect",
        [],
        None,
        "replay every trace device onto this file or device: filename=VALUE with replay_devices=shared",
        |j, v| {
            j.filename = Some(non_empty(v, "replay_redirect needs a file or device")?);
            j.replay.devices = DeviceMapping::Shared;
            Ok(())
        }
    ),
    opt!(
        "replay_devices",
        [],
        None,
        "nvsched: split (each trace device its own part of the job's file, default) or shared (one space)",
        |j, v| {
            j.replay.devices = match v.trim() {
                "split" => DeviceMapping::Split,
                "shared" => DeviceMapping::Shared,
                other => return Err(format!("'{other}' is neither split nor shared")),
            };
            Ok(())
        }
    ),
    opt!(
        "replay_outside",
        [],
        None,
        "nvsched: requests beyond their device's part: drop (default, counted) or wrap (offset modulo the part)",
        |j, v| {
            j.replay.outside = match v.trim() {
                "drop" => Outside::Drop,
                "wrap" => Outside::Wrap,
                other => return Err(format!("'{other}' is neither drop nor wrap")),
            };
            Ok(())
        }
    ),
    opt!(
        "precondition",
        [],
        None,
        "nvsched: simulated drive state before the run: clean, partial:FRACTION or full",
        |j, v| {
            let ok = v == "clean"
                || v == "full"
                || v.strip_prefix("partial:")
                    .and_then(|f| f.parse::<f64>().ok())
                    .is_some_and(|f| (0.0..=1.0).contains(&f));
            if !ok {
                return Err(format!("'{v}' is not a drive state; accepted: clean, full, partial:FRACTION (0..=1)"));
            }
            j.precondition = Some(v.to_string());
            Ok(())
        }
    ),
];

/// fio's checksum verify methods: nvsched checks each with its own crc32c header.
const VERIFY_CHECKSUMS: &[&str] = &[
    "crc32c",
    "crc32c-intel",
    "crc32",
    "crc64",
    "crc16",
    "crc7",
    "md5",
    "sha1",
    "sha256",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
    "meta",
];

/// fio options nvsched knows of but does not model, each with the reason: a precise
/// message instead of "unknown option". Together with `OPTIONS` they cover every option
/// fio 3.33 lists (`fio --cmdhelp=all`, and `--enghelp` of io_uring and libaio).
const FIO_UNSUPPORTED: &[(&str, &str)] = &[
    ("bs_unaligned", "blocks are multiples of 512 bytes, as direct I/O needs"),
    ("blocksize_unaligned", "blocks are multiples of 512 bytes, as direct I/O needs"),
    ("dedupe_global", "dedupe_mode=working_set is not supported; dedupe_mode=repeat repeats pieces within each job"),
    (
        "dedupe_working_set_percentage",
        "dedupe_mode=working_set is not supported; dedupe_mode=repeat repeats pieces within each job",
    ),
    ("cmdprio_hint", "I/O priority hints are not modelled"),
    ("priohint", "I/O priority hints are not modelled"),
    ("verify_offset", "nvsched's verify header sits at the start of the block"),
    ("verify_state_load", "nvsched keeps no verify state between runs; verify_only checks each block's own header"),
    ("trim_percentage", "trimmed blocks are not verified (fio's verify_trim)"),
    ("trim_backlog", "trimmed blocks are not verified (fio's verify_trim)"),
    ("trim_backlog_batch", "trimmed blocks are not verified (fio's verify_trim)"),
    ("trim_verify_zero", "trimmed blocks are not verified (fio's verify_trim)"),
    ("atomic", "atomic writes are not modelled"),
    ("writefua", "the sg engine is not supported; sync=1 writes carry FUA"),
    ("readfua", "the sg engine is not supported"),
    ("hipri", "polled completions (IORING_SETUP_IOPOLL) are not supported; --poll busy-polls the completion queue"),
    ("hipri_percentage", "polled completions (IORING_SETUP_IOPOLL) are not supported"),
    ("cmd_type", "io_uring passthrough commands (io_uring_cmd) are not supported"),
    ("write_barrier", "barrier writes are not supported"),
    ("uid", "jobs run as the user who starts nvsched"),
    ("gid", "jobs run as the user who starts nvsched"),
    ("profile", "fio's built-in profiles are not included; write their jobs out"),
    ("block_error_percentiles", "zoned block devices (zonemode=zbd) are not modelled"),
    ("max_open_zones", "zoned block devices (zonemode=zbd) are not modelled"),
    ("job_max_open_zones", "zoned block devices (zonemode=zbd) are not modelled"),
    ("ignore_zone_limits", "zoned block devices (zonemode=zbd) are not modelled"),
    ("zonecapacity", "zoned block devices (zonemode=zbd) are not modelled"),
    ("zone_reset_frequency", "zoned block devices (zonemode=zbd) are not modelled"),
    ("zone_reset_threshold", "zoned block devices (zonemode=zbd) are not modelled"),
    ("read_beyond_wp", "zoned block devices (zonemode=zbd) are not modelled"),
];

/// Options fio 3.33 still knows by name but deprecated, each with whether fio only
/// warns (and ignores it) or refuses the job, and what to write instead. Found by trying
/// every option-like string in the fio 3.33 binary with `--parse-only`.
const FIO_DEPRECATED: &[(&str, Deprecation)] = &[
    ("verifysort", Deprecation::Ignored),
    ("verifysort_nr", Deprecation::Ignored),
    ("flow_watermark", Deprecation::Ignored),
    ("rwmixcycle", Deprecation::Refused("rwmixread/rwmixwrite set the mix; nothing sets its cycle")),
    ("percentage_sequential", Deprecation::Refused("set percentage_random instead")),
];

#[derive(Clone, Copy)]
enum Deprecation {
    /// fio prints "Option X is deprecated" and goes on without it.
    Ignored,
    /// fio prints that and drops the job file; with what to write instead.
    Refused(&'static str),
}

fn deprecation(key: &str) -> Option<Deprecation> {
    FIO_DEPRECATED.iter().find(|(name, _)| *name == key).map(|(_, d)| *d)
}

/// Why nvsched does not take `key`, a fio option it knows of, if it is one.
pub fn unsupported_reason(key: &str) -> Option<&'static str> {
    FIO_UNSUPPORTED.iter().find(|(name, _)| *name == key).map(|(_, why)| *why)
}

/// Looks up an option by name or alias.
pub fn find_option(key: &str) -> Option<&'static OptionDef> {
    OPTIONS.iter().find(|o| o.name == key || o.aliases.contains(&key))
}

/// Why `key` is not an option nvsched takes: a fio option it does not support, or no
/// option at all (with the closest name, if one is close).
pub fn why_not_an_option(key: &str) -> String {
    if let Some(Deprecation::Refused(instead)) = deprecation(key) {
        format!("is deprecated: fio 3.33 refuses it too ('Option {key} is deprecated'); {instead}")
    } else if let Some(Deprecation::Ignored) = deprecation(key) {
        "is deprecated and has no effect: a job may give it, and nvsched ignores it with a warning, as fio 3.33 does"
            .to_string()
    } else if let Some(why) = unsupported_reason(key) {
        format!("is a fio option nvsched does not support: {why}")
    } else {
        match closest_option(key) {
            Some(s) => format!("is not a known option (did you mean '{s}'?)"),
            None => "is not a known option".to_string(),
        }
    }
}

pub(super) fn apply_option(
    job: &mut JobSpec,
    opt: &RawOption,
    opts: ParseOptions,
    warnings: &mut Vec<String>,
) -> Result<(), JobFileError> {
    let key = opt.key.as_str();
    if let Some(Deprecation::Ignored) = deprecation(key) {
        warnings.push(format!(
            "{}: option '{key}' is deprecated and has no effect; ignored, as fio 3.33 ignores it ('Option {key} is deprecated')",
            opt.at
        ));
        return Ok(());
    }
    let Some(def) = find_option(key) else {
        let why = why_not_an_option(key);
        if opts.ignore_unsupported {
            warnings.push(format!("{}: option '{key}' {why}; ignored", opt.at));
            return Ok(());
        }
        return Err(JobFileError::new(
            &opt.at,
            Some(key),
            format!("'{key}' {why} (--ignore-unsupported turns this into a warning)"),
        ));
    };
    let value = match (&opt.value, def.bare) {
        (Some(v), _) => v.as_str(),
        (None, Some(meaning)) => meaning,
        (None, None) => return Err(JobFileError::new(&opt.at, Some(key), "needs a value (key=value)")),
    };
    (def.apply)(job, value).map_err(|m| {
        // name what the value was expanded from: an unset ${VAR} expands to nothing
        let message = match &opt.written {
            Some(written) if written != value => format!("{m} (expanded from '{written}')"),
            _ => m,
        };
        JobFileError::new(&opt.at, Some(key), message)
    })?;
    job.option_lines.insert(def.name, opt.at.clone());
    if def.name == "verify" && job.verify && !value.starts_with("crc32c") && value != "pattern" && value != "null" {
        warnings.push(format!(
            "{}: verify={value} is checked with crc32c (nvsched's verify header is its own, not fio's)",
            opt.at
        ));
    }
    Ok(())
}

fn closest_option(key: &str) -> Option<&'static str> {
    OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .map(|name| (edit_distance(key, name), name))
        .filter(|(d, name)| *d <= 2.max(name.len() / 4))
        .min()
        .map(|(_, name)| name)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
