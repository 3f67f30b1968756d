//! The page cache buffered jobs go through (`host.page_cache`): writes return from memory
//! and are written back by the flusher, within the dirty limit; cached reads skip the
//! device; fsync waits for its writeback; trims drop pages; writeback is charged to the
//! tenant that dirtied the pages.

mod common;

use common::{profile, run_with};
use nvsched_core::{IoPrio, Nanos, Op};
use nvsched_policy::Request;
use nvsched_sim::{Observer, SimOutcome};
use nvsched_ssd::DeviceProfile;

/// Every dispatch and every completion (the flusher's included), in order.
#[derive(Default)]
struct Log {
    dispatched: Vec<(Nanos, Request)>,
    completed: Vec<(Nanos, Request)>,
}

impl Observer for Log {
    fn on_dispatch(&mut self, now: Nanos, rq: &Request, _: u32) {
        self.dispatched.push((now, *rq));
    }
    fn on_complete(&mut self, now: Nanos, rq: &Request, _: Nanos) {
        self.completed.push((now, *rq));
    }
}

fn cached(size: &str, more: &[(&str, &str)]) -> DeviceProfile {
    let mut o = vec![("host.page_cache.size_bytes", size)];
    o.extend_from_slice(more);
    profile(&o)
}

fn run_logged(text: &str, p: &DeviceProfile) -> (SimOutcome, Log) {
    let mut log = Log::default();
    let out = run_with(text, "none", p, 1, &mut log);
    (out, log)
}

const MIB: u64 = 1 << 20;

#[test]
fn buffered_writes_return_from_memory_and_the_flusher_writes_them_all_back() {
    let text = "[w]\nfilename=/dev/nvme0n1\ndirect=0\nrw=write\nbs=4k\nsize=8m\nend_fsync=1\n";
    let p = cached("67108864", &[]);
    let (out, log) = run_logged(text, &p);
    let flusher = 1; // one past the only clone
                     // the system call and the copy (100 ns per KiB), never the device's 20 us
    let write = &out.clones[0].stats.dirs[1];
    assert_eq!(write.total_ios, 2048);
    assert_eq!((write.lat.min, write.lat.max), (p.host.submit_ns + 400, p.host.submit_ns + 400));
    assert_eq!(out.engine.writeback_bytes, 8 * MIB);
    let writes: Vec<&Request> = log.dispatched.iter().map(|(_, r)| r).filter(|r| r.op == Op::Write).collect();
    assert_eq!(writes.len() as u64, out.engine.writeback_requests);
    assert!(writes.iter().all(|r| r.job == flusher && r.prio == IoPrio::default() && r.nice == 0));
    assert!(writes.iter().all(|r| r.len_bytes <= p.host.max_merge_bytes && r.offset_bytes % 4096 == 0));
    // above 10% of the cache the flusher starts (async); end_fsync writes the rest (sync)
    assert!(writes.iter().any(|r| !r.sync) && writes.iter().any(|r| r.sync), "both kinds");
    let last_writeback = log.completed.iter().filter(|(_, r)| r.job == flusher).map(|(t, _)| *t).max().unwrap();
    let flush = log.dispatched.iter().find(|(_, r)| r.op == Op::Flush).expect("end_fsync's flush").0;
    assert!(flush >= last_writeback, "the flush waits for the writeback");
}

#[test]
fn reads_of_cached_pages_skip_the_device_and_a_sequential_miss_reads_ahead() {
    let text = "[global]\nfilename=/dev/nvme0n1\ndirect=0\nbs=4k\n\
                [w]\nrw=write\nsize=4m\n\
                [r]\nstonewall\nrw=randread\nsize=4m\n\
                [cold]\nstonewall\nrw=read\noffset=4m\nsize=4m\n";
    let (out, log) = run_logged(text, &cached("67108864", &[]));
    // the cold job's first read, in the middle of the device, is not sequential to
    // anything and reads just its page (as Linux's on-demand read-ahead does); the second
    // misses and reads a 16 KiB window; from then on each window, once the reader enters
    // it, sends the next one ahead, twice or four times as large up to 128 KiB, and the
    // reader finds its pages cached or on their way
    let e = &out.engine;
    assert_eq!(e.cache_read_misses, 2);
    assert_eq!(e.cache_read_hits + e.cache_read_waits, 1024 + 1022);
    // 32 and 64 KiB, then 33 of 128 KiB: the last window the job reaches sends one
    // more, past its 4 MiB (the file is the whole device)
    assert_eq!(e.readahead_requests, 2 + 33);
    let reads: Vec<&Request> = log.dispatched.iter().map(|(_, r)| r).filter(|r| r.op == Op::Read).collect();
    assert_eq!((reads[0].offset_bytes, reads[0].len_bytes), (4 * MIB, 4096));
    let kib: Vec<u32> = reads[1..5].iter().map(|r| r.len_bytes / 1024).collect();
    assert_eq!(kib, [16, 32, 64, 128]);
    assert!(reads[4..].iter().all(|r| r.len_bytes == 128 * 1024));
    // each page comes from the device once, and the reads cover the job's 4 MiB
    let mut pages: Vec<u64> =
        reads.iter().flat_map(|r| (r.offset_bytes / 4096)..(r.offset_bytes + u64::from(r.len_bytes)) / 4096).collect();
    let read_pages = pages.len();
    pages.sort_unstable();
    pages.dedup();
    assert_eq!(pages.len(), read_pages, "a page read twice");
    assert_eq!((read_pages, pages[0]), (1 + 4 + 8 + 16 + 33 * 32, 1024));
    // the job still sees its own 4 KiB reads
    assert_eq!(out.clones[2].stats.dirs[0].total_ios, 1024);
}

#[test]
fn the_dirty_limit_holds_writers_to_what_the_device_writes_back() {
    // 16 units x 4 KiB per ms: 65.5 MB/s; a 16 MiB cache lets 20% (3.2 MiB) be unwritten
    let p = cached("16777216", &[("simple.write_ns", "1000000")]);
    // sequential, so that each writeback spans all units
    let text = "[w]\nfilename=/dev/nvme0n1\ndirect=0\nrw=write\nbs=4k\nsize=1g\nruntime=2\ntime_based\n";
    let (out, log) = run_logged(text, &p);
    let limit = 16 * MIB / 5;
    let (mut written, mut landed, mut most_unwritten) = (0u64, 0u64, 0u64);
    for (_, rq) in &log.completed {
        if rq.job == 1 {
            landed += u64::from(rq.len_bytes);
        } else {
            written += u64::from(rq.len_bytes);
        }
        most_unwritten = most_unwritten.max(written.saturating_sub(landed));
    }
    assert!(most_unwritten <= limit, "{most_unwritten} unwritten bytes over the limit {limit}");
    assert!(most_unwritten > limit * 9 / 10, "the writer does fill the allowance: {most_unwritten}");
    assert!(out.engine.throttled_writes > 0);
    let device_bytes = 2.0 * 16.0 * 4096.0 * 1000.0;
    let job_bytes = out.clones[0].stats.dirs[1].io_bytes as f64;
    assert!(job_bytes <= device_bytes + limit as f64, "{job_bytes} bytes in 2 s beat the device");
    assert!(job_bytes > 0.9 * device_bytes, "writeback keeps the device busy: {job_bytes}");
}

#[test]
fn fsync_sends_its_flush_once_the_writes_before_it_are_written_back() {
    let text = "[w]\nfilename=/dev/nvme0n1\ndirect=0\nrw=randwrite\nbs=4k\nsize=1m\nfsync=4\n";
    let (out, log) = run_logged(text, &cached("67108864", &[]));
    let mut events: Vec<(Nanos, bool, &Request)> = log.completed.iter().map(|(t, r)| (*t, true, r)).collect();
    events.extend(log.dispatched.iter().map(|(t, r)| (*t, false, r)));
    events.sort_by_key(|(t, done, _)| (*t, *done));
    let (mut written, mut landed, mut flushes) = (0u64, 0u64, 0);
    for (_, done, rq) in events {
        match (done, rq.op, rq.job) {
            (true, Op::Write, 1) => landed += u64::from(rq.len_bytes),
            (true, Op::Write, _) => written += u64::from(rq.len_bytes),
            (false, Op::Flush, _) => {
                flushes += 1;
                assert_eq!(landed, written, "flush {flushes} went out before its writeback landed");
            }
            (false, Op::Write, _) => assert!(rq.sync, "fsync's writeback is sync"),
            _ => {}
        }
    }
    assert_eq!(flushes, 63, "as fio counts them: after every 4th write but the last");
    assert_eq!(out.engine.writeback_bytes, MIB - 16 * 1024, "the last 4 writes, after the last fsync, stay dirty");
    // the fsync's latency holds the writeback and the flush
    let sync = &out.clones[0].stats.sync;
    assert!(sync.min > 20_000, "{}", sync.min);
}

#[test]
fn a_sequential_reader_slower_than_the_device_waits_only_while_the_windows_grow() {
    let text = "[r]\nfilename=/dev/nvme0n1\ndirect=0\nrw=read\nbs=4k\nsize=4m\nthinktime=20us\n";
    let (out, _) = run_logged(text, &cached("67108864", &[]));
    let e = &out.engine;
    // the first read misses and waits for 16 KiB; the 32 KiB window it sends is still
    // on its way when the reader gets there, three reads later; from the 64 KiB window
    // on, each arrives before the reader
    assert_eq!((e.cache_read_misses, e.cache_read_waits, e.cache_read_hits), (1, 1, 1022));
    assert_eq!(e.readahead_requests, 2 + 33, "32 and 64 KiB, 128 KiB to the end and one past it");
    let read = &out.clones[0].stats.dirs[0];
    assert!(read.clat.max > 80_000, "the first window is waited for (80 us a page)");
    // all but two reads: the system call and the copy
    assert_eq!((read.clat_hist.fraction_at_most(3_000) * 1024.0).round(), 1022.0);
}

#[test]
fn a_trim_drops_cached_pages_and_dirty_ones_are_never_written() {
    let text = "[global]\nfilename=/dev/nvme0n1\ndirect=0\nbs=4k\nsize=1m\n\
                [w]\nrw=write\n[t]\nstonewall\nrw=trim\n[r]\nstonewall\nrw=read\n";
    let (out, _) = run_logged(text, &cached("67108864", &[]));
    assert_eq!(out.engine.writeback_bytes, 0, "under the background threshold, and trimmed before expiry");
    let e = &out.engine;
    assert_eq!(e.cache_read_hits + e.cache_read_waits + e.cache_read_misses, 256);
    assert_eq!(
        (e.cache_read_misses, e.readahead_requests),
        (1, 2 + 9),
        "every page was trimmed: all read again (16, 32, 64 KiB, then 128 KiB, one window past the end)"
    );
    assert_eq!(out.device.discards, 256);
}

/// `unlink=1` on a buffered writer: Linux evicts the deleted file and never writes its
/// dirty pages (fio 3.33 writing 512 MiB buffered with unlink=1 on this VM's ext4: 0 MiB
/// reached the disk in the job or the 40 s after it). A file another running clone still
/// has open goes when that clone ends.
#[test]
fn an_unlinked_file_s_dirty_pages_are_never_written_back() {
    let idle = "[idle]\nstonewall\nfilename=other\nsize=4k\nrw=read\nthinktime=40s\nnumber_ios=2\n";
    let writer = "[w]\nfilename=f\ndirect=0\nsize=8m\nbs=1m\nrw=write\nunlink=1\n";
    let p = cached("1073741824", &[]);
    let (out, _) = run_logged(&format!("{writer}{idle}"), &p);
    assert_eq!(out.engine.writeback_bytes, 0, "under the background threshold, and gone before expiry");
    let (out, _) = run_logged(&format!("{}{idle}", writer.replace("unlink=1\n", "")), &p);
    assert_eq!(out.engine.writeback_bytes, 8 * MIB, "without unlink the flusher writes it once it expires");
    // a reader of the same file, still running when the writer ends, keeps it open:
    // pages that expire meanwhile are written back, the rest go when the reader ends
    let reader = |secs: u32| {
        format!("[r]\nfilename=f\ndirect=0\nsize=8m\nbs=1m\nrw=read\nthinktime=1s\ntime_based\nruntime={secs}s\n")
    };
    let (out, _) = run_logged(&format!("{writer}{}{idle}", reader(2)), &p);
    assert_eq!(out.engine.writeback_bytes, 0, "the reader ends 2 s later, before they expire");
    let (out, _) = run_logged(&format!("{writer}{}{idle}", reader(60)), &p);
    assert_eq!(out.engine.writeback_bytes, 8 * MIB, "the reader ends after 60 s: they expired and were written back");
}

#[test]
fn pages_dirty_for_too_long_are_written_back_below_the_background_threshold() {
    let p = cached(
        "1073741824",
        &[("host.page_cache.dirty_expire_ms", "200"), ("host.page_cache.writeback_interval_ms", "50")],
    );
    let text = "[w]\nfilename=/dev/nvme0n1\ndirect=0\nrw=write\nbs=4k\nsize=1m\nrate_iops=100\nruntime=1\ntime_based\n";
    let (_, log) = run_logged(text, &p);
    let dirtied: std::collections::HashMap<u64, Nanos> =
        log.completed.iter().filter(|(_, r)| r.job == 0).map(|(t, r)| (r.offset_bytes, *t)).collect();
    let writebacks: Vec<&(Nanos, Request)> = log.dispatched.iter().filter(|(_, r)| r.job == 1).collect();
    assert!(!writebacks.is_empty());
    for (t, rq) in &writebacks {
        let age = *t - dirtied[&rq.offset_bytes];
        assert!(age >= Nanos::from_ms(200) - Nanos(3_000), "written back {age} after it was dirtied");
        assert!(age <= Nanos::from_ms(260), "an expired page waits at most one interval: {age}");
    }
    let written: u64 = writebacks.iter().map(|(_, r)| u64::from(r.len_bytes)).sum();
    let old_enough = dirtied.values().filter(|&&t| t < Nanos::from_ms(750)).count() as u64;
    assert!(written >= old_enough * 4096, "{written} bytes written back, {old_enough} pages old enough");
}

#[test]
fn writeback_is_charged_to_the_tenant_that_dirtied_the_pages() {
    let text = "[global]\nfilename=/dev/nvme0n1\ndirect=0\nrw=write\nbs=64k\nsize=16m\n\
                [a]\ncgroup=a\ncgroup_weight=100\n[b]\ncgroup=b\ncgroup_weight=300\noffset=1g\n";
    let (out, log) = run_logged(text, &cached("33554432", &[]));
    let writebacks: Vec<&Request> = log.dispatched.iter().map(|(_, r)| r).filter(|r| r.job == 2).collect();
    assert!(writebacks.len() > 10);
    let tenant_of = |c: usize| out.clones[c].tenant;
    assert_ne!(tenant_of(0), tenant_of(1));
    for rq in writebacks {
        let (owner, weight) = if rq.offset_bytes < 1 << 30 { (0, 100) } else { (1, 300) };
        assert_eq!((rq.tenant, rq.tenant_weight), (tenant_of(owner), weight), "{rq:?}");
    }
}

#[test]
fn o_sync_writes_and_direct_jobs_bypass_the_cache_and_runs_repeat_exactly() {
    let p = cached("67108864", &[]);
    let text = "[global]\nfilename=/dev/nvme0n1\nrw=randwrite\nbs=4k\nsize=1m\n\
                [osync]\ndirect=0\nsync=1\n[direct]\ndirect=1\noffset=1g\n";
    let (out, _) = run_logged(text, &p);
    assert_eq!(out.engine.writeback_requests, 0);
    assert!(out.clones.iter().all(|c| c.stats.dirs[1].lat.min >= 20_000), "both wait for the device");
    // determinism with writeback, throttling and read-ahead in play
    let text = "[global]\nfilename=/dev/nvme0n1\ndirect=0\nruntime=300ms\ntime_based\n\
                [w]\nrw=randwrite\nbs=4k\nsize=64m\n[r]\nrw=read\nbs=16k\nsize=64m\noffset=1g\n";
    let p = cached("8388608", &[("simple.write_ns", "200000")]);
    let key = |o: &SimOutcome| {
        (o.end, o.engine.events, o.engine.writeback_bytes, o.engine.throttled_writes, o.clones[0].stats.dirs[1].lat.max)
    };
    let (a, _) = run_logged(text, &p);
    let (b, _) = run_logged(text, &p);
    assert_eq!(key(&a), key(&b));
    assert!(a.engine.throttled_writes > 0 && a.engine.cache_read_misses > 0);
}

#[test]
fn a_write_of_part_of_a_page_reads_the_page_first_and_waits_for_it() {
    // 512-byte random writes into 1 MiB: each page is read once, by the first write into
    // it, at the writer's priority; a write into a page being read waits for that read
    let text = "[w]\nfilename=/dev/nvme0n1\ndirect=0\nrw=randwrite\nbs=512\nsize=1m\n\
                prioclass=1\niodepth=1\n";
    let p = cached("67108864", &[("simple.read_ns", "50000")]);
    let (out, log) = run_logged(text, &p);
    let e = &out.engine;
    let reads: Vec<&Request> = log.dispatched.iter().map(|(_, r)| r).filter(|r| r.op == Op::Read).collect();
    assert_eq!(e.partial_page_reads, 256, "each of the 256 pages, once");
    assert_eq!(reads.len(), 256);
    assert!(reads.iter().all(|r| r.len_bytes == 4096 && r.offset_bytes % 4096 == 0 && r.prio.class.name() == "rt"));
    let write = &out.clones[0].stats.dirs[1];
    assert_eq!(write.total_ios, 2048);
    // 256 writes waited for the device's 50 us read; the rest copied from memory
    let slow = p.host.submit_ns + 50_000;
    assert!(write.lat.max >= slow, "a write waited for its page: max {}", write.lat.max);
    assert!(write.lat.min < 10_000, "a write into a cached page does not wait: min {}", write.lat.min);
}

#[test]
fn a_write_of_whole_pages_or_into_cached_ones_reads_nothing() {
    // aligned 4 KiB writes, then 512-byte writes into the pages they dirtied
    let text = "[global]\nfilename=/dev/nvme0n1\ndirect=0\nsize=1m\n\
                [whole]\nrw=write\nbs=4k\n\
                [part]\nstonewall\nrw=randwrite\nbs=512\n";
    let (out, _) = run_logged(text, &cached("67108864", &[]));
    assert_eq!(out.engine.partial_page_reads, 0);
    let text = "[s]\nfilename=/dev/nvme0n1\ndirect=0\nsize=3m\nrw=write\nbs=6k\n";
    let (out, _) = run_logged(text, &cached("67108864", &[]));
    // 512 writes of 6 KiB: each pair shares a page, which the first reads (it ends
    // there) and the second finds dirty (it starts there)
    assert_eq!(out.engine.partial_page_reads, 256);
}

#[test]
fn a_write_of_part_of_a_page_of_a_new_file_reads_nothing_unless_fio_lays_the_file_out() {
    // fio only allocates a new file for a job that only writes, so its pages hold no
    // data and a 512-byte buffered write does not read its page (fio 3.33 on this VM's
    // ext4, 8 MiB of 512-byte random writes: no more sectors read than with 4 KiB
    // writes); with overwrite=1, or for a job that also reads, fio writes the file out
    // first, and each page is read once (2048 pages: about 16,400 more sectors read)
    let run = |more: &str| {
        let text = format!("[w]\nfilename=f\ndirect=0\nrw=randwrite\nbs=512\nsize=1m\n{more}");
        let (out, log) = run_logged(&text, &cached("67108864", &[]));
        let reads = log.dispatched.iter().filter(|(_, r)| r.op == Op::Read).count() as u64;
        (out.engine.partial_page_reads, out.engine.partial_pages_zeroed, reads)
    };
    assert_eq!(run(""), (0, 256, 0), "a new file: zeros, and nothing read");
    assert_eq!(run("overwrite=1\n"), (256, 0, 256), "laid out with data");
    let (read, zeroed, _) = run("rw=randrw\n");
    assert!(read > 0 && zeroed == 0, "a job that reads has its file laid out: {read} {zeroed}");
    // a direct job on the same file gives the page it writes data, which the buffered
    // writer then reads; it zero-fills the others
    assert_eq!(run("[d]\nfilename=f\ndirect=1\nrw=write\nbs=4k\nsize=4k\n"), (1, 255, 1));
    // the device itself always holds data
    let (out, _) =
        run_logged("[w]\nfilename=/dev/nvme0n1\ndirect=0\nrw=randwrite\nbs=512\nsize=1m\n", &cached("67108864", &[]));
    assert_eq!((out.engine.partial_page_reads, out.engine.partial_pages_zeroed), (256, 0));
}

#[test]
fn a_buffered_read_of_pages_of_a_new_file_that_nothing_wrote_reads_zeros_without_io() {
    // the writer comes first, so fio only allocates the file (the reader finds it made);
    // the writer writes its first 64 KiB, and the reader then reads the whole 1 MiB
    let text = "[global]\nfilename=f\ndirect=0\nbs=4k\nsize=1m\n\
                [w]\nrw=write\nnumber_ios=16\n[r]\nstonewall\nrw=read\n";
    let (out, log) = run_logged(text, &cached("67108864", &[]));
    let device_reads = log.dispatched.iter().filter(|(_, r)| r.op == Op::Read).count();
    assert_eq!((device_reads, out.engine.read_pages_zeroed), (0, 240), "{:?}", out.engine);
    assert_eq!(out.clones[1].stats.dirs[0].total_ios, 256);
    // written out first (the reader comes first): every page is read from the drive
    let text = text.replace("[w]\nrw=write\nnumber_ios=16\n[r]\nstonewall\nrw=read\n", "[r]\nrw=read\n");
    let (out, log) = run_logged(&text, &cached("67108864", &[]));
    assert!(log.dispatched.iter().any(|(_, r)| r.op == Op::Read));
    assert_eq!(out.engine.read_pages_zeroed, 0);
}

#[test]
fn a_buffered_read_of_part_of_a_page_reads_the_whole_page() {
    let text = "[r]\nfilename=/dev/nvme0n1\ndirect=0\nrw=randread\nbs=512\nsize=64k\nnumber_ios=64\n";
    let (_, log) = run_logged(text, &cached("67108864", &[]));
    let reads: Vec<&Request> = log.dispatched.iter().map(|(_, r)| r).filter(|r| r.op == Op::Read).collect();
    assert!(!reads.is_empty());
    assert!(reads.iter().all(|r| r.offset_bytes % 4096 == 0 && r.len_bytes == 4096), "{reads:?}");
    // jobs and observers still see what the job asked for
    let done: Vec<&Request> = log.completed.iter().map(|(_, r)| r).collect();
    assert!(done.iter().all(|r| r.len_bytes == 512));
}

#[test]
fn sync_file_range_write_starts_writeback_of_the_range_and_returns() {
    // every 16 writes, the 64 KiB written since the last one is written back (async);
    // nothing waits, and nothing flushes the device's cache
    let text = "[w]\nfilename=/dev/nvme0n1\ndirect=0\nrw=write\nbs=4k\nsize=1m\nsync_file_range=write:16\n";
    let (out, log) = run_logged(text, &cached("67108864", &[]));
    let sync = &out.clones[0].stats.sync;
    assert_eq!(sync.n, 15, "after every 16th write but the last");
    assert_eq!(out.device.flushes, 0);
    assert_eq!(out.engine.writeback_bytes, 15 * 64 * 1024, "the last 16 writes stay dirty");
    let writes: Vec<&Request> = log.dispatched.iter().map(|(_, r)| r).filter(|r| r.op == Op::Write).collect();
    assert!(writes.iter().all(|r| !r.sync && r.len_bytes == 64 * 1024 && r.offset_bytes % (64 * 1024) == 0));
    assert!(sync.max < 10_000, "the call does not wait: {} ns", sync.max);
}

#[test]
fn sync_file_range_with_all_flags_waits_for_its_sync_writeback_and_never_flushes() {
    let text = "[w]\nfilename=/dev/nvme0n1\ndirect=0\nrw=randwrite\nbs=4k\nsize=1m\n\
                sync_file_range=wait_before,write,wait_after:8\n";
    let (out, log) = run_logged(text, &cached("67108864", &[]));
    assert_eq!(out.device.flushes, 0);
    let writes: Vec<&Request> = log.dispatched.iter().map(|(_, r)| r).filter(|r| r.op == Op::Write).collect();
    assert!(!writes.is_empty() && writes.iter().all(|r| r.sync), "WB_SYNC_ALL: sync requests");
    // each call waits for the device's 20 us write of its pages
    let sync = &out.clones[0].stats.sync;
    assert_eq!(sync.n, 31);
    assert!(sync.min > 20_000, "{} ns", sync.min);
    // the range is the writes' span: random 4 KiB writes spread it, so the pages
    // written back are exactly those written (never more)
    assert_eq!(out.engine.writeback_bytes, 31 * 8 * 4096);
}

#[test]
fn sync_file_range_without_the_page_cache_is_the_system_call_only() {
    let text = "[w]\nfilename=/dev/nvme0n1\nrw=write\nbs=4k\nsize=1m\nsync_file_range=write,wait_after:16\n";
    let (out, _) = run_logged(text, &profile(&[]));
    assert_eq!((out.clones[0].stats.sync.n, out.device.flushes), (15, 0));
    assert_eq!(out.engine.writeback_requests, 0);
}

#[test]
fn a_sync_waits_for_its_own_range_at_its_own_priority() {
    // a real-time log writer syncs each 4 KiB write (sync_file_range with all flags, or
    // fsync of its own file) while a bulk writer keeps writeback of 512 KiB requests in
    // flight in another file; K2 serves real-time requests first. The log's syncs
    // write at the log's priority and wait for its own page, not for the bulk writeback
    let p = cached("16777216", &[("simple.write_ns", "200000")]);
    for sync in ["sync_file_range=wait_before,write,wait_after", "fsync=1"] {
        let text = format!(
            "[global]\ndirect=0\nrw=write\nruntime=200ms\ntime_based\n\
             [bulk]\nfilename=bulk\nbs=1m\nsize=64m\n\
             [log]\nfilename=log\nbs=4k\nsize=1m\nprioclass=1\n{sync}\n"
        );
        let mut log = Log::default();
        let out = run_with(&text, "k2:bound=2", &p, 1, &mut log);
        let rt_writes = log.dispatched.iter().filter(|(_, r)| r.op == Op::Write && r.prio.class.name() == "rt").count();
        let log_sync = &out.clones[1].stats.sync;
        assert!(out.engine.writeback_requests > 100, "{sync}: the bulk writer keeps writeback busy");
        assert_eq!(rt_writes as u64, log_sync.n, "{sync}: each sync writes its page at real-time priority");
        // a bulk writeback request holds a unit for 8 pages x 200 us = 1.6 ms: the log's
        // write waits for one of K2's two slots, then 200 us (and fsync's flush); had it
        // waited for all writeback in flight, 5.9 ms
        assert!(log_sync.mean() < 2_000_000.0, "{sync}: the log waited {} ns on average", log_sync.mean());
    }
}

#[test]
fn the_flusher_takes_the_writers_files_in_turn() {
    // two sequential buffered writers of their own files, held at the dirty limit of a
    // 16 MiB cache: the flusher writes 4 MiB of one file, then of the other (as the
    // kernel's takes inodes in turn), and both go on at about the same rate
    let p = cached("16777216", &[("simple.write_ns", "200000")]);
    let text = "[global]\ndirect=0\nrw=write\nbs=64k\nsize=256m\nruntime=1s\ntime_based\n\
                [a]\nfilename=a\n[b]\nfilename=b\n";
    let (out, log) = run_logged(text, &p);
    let written = |k: usize| out.clones[k].stats.dirs[1].io_bytes as f64;
    let (a, b) = (written(0), written(1));
    assert!(a > 16.0 * MIB as f64 && b > 16.0 * MIB as f64, "both write: {a} {b}");
    assert!((a / b - 1.0).abs() < 0.25, "a wrote {a} bytes, b {b}");
    // the flusher's writes switch files after 4 MiB, or where a file has no more dirty
    // pages (a device-order sweep switched at ~4.4 MiB, wherever the dirty pages ended)
    let flusher = 2;
    let b_starts = log.completed.iter().filter(|(_, r)| r.job == 1).map(|(_, r)| r.offset_bytes).min().unwrap();
    let mut runs: Vec<(u32, u64)> = Vec::new();
    for (_, rq) in log.dispatched.iter().filter(|(_, r)| r.job == flusher) {
        let tenant_file = u32::from(rq.offset_bytes >= b_starts);
        match runs.last_mut() {
            Some((file, bytes)) if *file == tenant_file => *bytes += u64::from(rq.len_bytes),
            _ => runs.push((tenant_file, u64::from(rq.len_bytes))),
        }
    }
    assert!(runs.len() > 4, "{runs:?}");
    assert!(runs.iter().filter(|(_, bytes)| *bytes == 4 * MIB).count() >= runs.len() / 2, "{runs:?}");
}

#[test]
fn the_flusher_starts_with_the_file_that_became_dirty_first() {
    // b dirties 1 MiB of its file, then a (its file lies first on the device) 1 MiB of
    // its own, which passes the background threshold of a 16 MiB cache (1.6 MiB): the
    // flusher writes b's file first, as the kernel takes inodes by when they became
    // dirty
    let p = cached("16777216", &[("simple.write_ns", "200000")]);
    let text = "[global]\ndirect=0\nrw=write\nbs=64k\nsize=1m\n\
                [a]\nfilename=a\nstartdelay=1ms\n[b]\nfilename=b\n";
    let (_, log) = run_logged(text, &p);
    let flusher = 2;
    let b_starts = log.completed.iter().filter(|(_, r)| r.job == 1).map(|(_, r)| r.offset_bytes).min().unwrap();
    let a_ends = log.completed.iter().filter(|(_, r)| r.job == 0).map(|(_, r)| r.offset_bytes).max().unwrap();
    assert!(a_ends < b_starts, "a's file lies first");
    let writeback: Vec<u64> =
        log.dispatched.iter().filter(|(_, r)| r.job == flusher).map(|(_, r)| r.offset_bytes).collect();
    // it writes until the dirty pages are under the threshold again: 4 runs of 128 KiB
    assert_eq!(writeback.len(), 4);
    assert!(writeback.iter().all(|&o| o >= b_starts), "b's file first: {writeback:?}");
}

#[test]
fn sync_file_range_wait_before_writes_only_once_the_range_is_written_back() {
    // two pages rewritten in turn, each write followed by sync_file_range over it: with
    // wait_before the call waits for the page's writeback still in flight and only then
    // writes the page again, so a page never has two writebacks in flight; with write
    // alone it does not wait, and they overlap
    let p = cached("67108864", &[("simple.write_ns", "1000000"), ("simple.units", "1")]);
    let overlaps = |flags: &str| {
        let text = format!(
            "[w]\nfilename=/dev/nvme0n1\ndirect=0\nrw=write\nbs=4k\nsize=8k\nruntime=50ms\ntime_based\nsync_file_range={flags}\n"
        );
        let (out, log) = run_logged(&text, &p);
        let mut events: Vec<(Nanos, bool, u64)> =
            log.completed.iter().filter(|(_, r)| r.job == 1).map(|(t, r)| (*t, true, r.offset_bytes)).collect();
        events.extend(log.dispatched.iter().filter(|(_, r)| r.job == 1).map(|(t, r)| (*t, false, r.offset_bytes)));
        events.sort();
        let mut in_flight = [0u32; 2];
        let mut most = 0;
        for (_, done, offset) in events {
            let page = (offset / 4096) as usize;
            if done {
                in_flight[page] -= 1;
            } else {
                in_flight[page] += 1;
                most = most.max(in_flight[page]);
            }
        }
        (out.clones[0].stats.sync.n, most)
    };
    let (syncs, most) = overlaps("wait_before,write");
    assert!(syncs > 10);
    assert_eq!(most, 1, "wait_before: one writeback of a page at a time");
    let (_, most) = overlaps("write");
    assert!(most > 1, "write alone does not wait: {most}");
}

#[test]
fn a_read_whose_waited_for_pages_were_evicted_meanwhile_goes_to_the_device() {
    // an idle-class sequential reader's 6 KiB reads straddle pages; a page it holds is
    // evicted by the random reader's misses while it waits for the other one, which
    // an earlier read brings: once that lands, the read must go to the device (it
    // waited for ever, and the run stalled)
    let text = "[global]\nfilename=/dev/nvme0n1\ndirect=0\nruntime=22ms\ntime_based\n\
                [seq]\nrw=read\nioengine=psync\nbs=6144\nsize=64m\nprioclass=3\n\
                [rand]\nrw=randread\nioengine=io_uring\niodepth=39\nbs=16k\noffset=64m\nsize=64m\n";
    let out = run_with(text, "mq-deadline", &cached("8388608", &[]), 1, &mut nvsched_sim::NoObserver);
    let e = &out.engine;
    assert!(e.cache_read_waits_evicted > 0, "the case arises");
    assert_eq!(e.completed, e.requests);
    assert!(out.clones[0].stats.dirs[0].total_ios > 0);
}
