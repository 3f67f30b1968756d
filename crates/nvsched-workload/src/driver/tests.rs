use super::*;
use crate::jobfile::tests::env;
use crate::spec::{parse_job_str, ParseOptions};
use std::path::Path;

fn driver(text: &str) -> JobDriver {
    driver_over(text, 1 << 30)
}

/// A started driver for the first job of `text` over `files` files of `file_bytes`
/// each, 1 MiB apart.
fn driver_over_files(text: &str, files: u64, file_bytes: u64) -> JobDriver {
    let spec = parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
    let regions: Vec<Region> = (0..files).map(|k| Region::new(k << 20, file_bytes)).collect();
    let mut d = JobDriver::new(Arc::new(spec), 0, &regions, 1).unwrap();
    d.start(Nanos::ZERO);
    d
}

/// A started driver for the first job of `text` over a region of `region_bytes`.
fn driver_over(text: &str, region_bytes: u64) -> JobDriver {
    let spec = parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
    let mut d = JobDriver::new(Arc::new(spec), 0, &[Region::new(0, region_bytes)], 1).unwrap();
    d.start(Nanos::ZERO);
    d
}

#[test]
fn cmdprio_percentage_gives_that_share_of_ios_the_other_priority() {
    let text =
        "[a]\nioengine=io_uring\niodepth=1\nrw=randrw\nprio=5\ncmdprio_percentage=30,100\ntime_based\nruntime=1\n";
    let mut d = driver(text);
    let (mut reads, mut reads_rt, mut writes_rt, mut writes) = (0, 0, 0, 0);
    let mut out = Vec::new();
    for i in 0..20_000u64 {
        out.clear();
        d.poll(Nanos(i), &mut out);
        for u in &out {
            let rt = u.prio == IoPrio::rt(0);
            assert!(rt || u.prio == IoPrio::be(5), "{:?}", u.prio);
            match u.op {
                Op::Read => (reads, reads_rt) = (reads + 1, reads_rt + u32::from(rt)),
                _ => (writes, writes_rt) = (writes + 1, writes_rt + u32::from(rt)),
            }
        }
        d.on_complete(Nanos(i), Op::Read, 4096, Nanos::ZERO);
    }
    let share = f64::from(reads_rt) / f64::from(reads);
    assert!((0.28..0.32).contains(&share), "{reads_rt} of {reads} reads");
    assert_eq!(writes_rt, writes, "100% of the writes");
}

/// (file, block) of every I/O a three-file job issues, completing each at once.
fn file_order(service: &str) -> Vec<(u16, u64)> {
    let text = format!("[j]\nsize=48k\nnrfiles=3\nbs=4k\nrw=write\nfile_service_type={service}\n");
    let mut d = driver_over_files(&text, 3, 16 << 10);
    let mut out = Vec::new();
    let mut order = Vec::new();
    for t in 1..100u64 {
        out.clear();
        if d.poll(Nanos(t), &mut out) == Poll::Finished {
            break;
        }
        for u in &out {
            assert_eq!(u64::from(u.file), u.offset_bytes >> 20, "the unit names its file");
            order.push((u.file, (u.offset_bytes & 0xfffff) / 4096));
            d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
        }
    }
    order
}

#[test]
fn end_of_pass_flushes_go_one_file_at_a_time_and_the_next_pass_waits_for_them() {
    let text = "[j]\nsize=16k\nnrfiles=2\nbs=4k\nrw=write\nioengine=libaio\niodepth=4\nloops=2\nend_fsync=1\n";
    let mut d = driver_over_files(text, 2, 8 << 10);
    let mut out = Vec::new();
    let mut poll = |d: &mut JobDriver, t: u64| {
        out.clear();
        let p = d.poll(Nanos(t), &mut out);
        (p, out.iter().map(|u| (u.op, u.file)).collect::<Vec<_>>())
    };
    let mut first = Vec::new();
    while let (Poll::Ready, units) = poll(&mut d, 1) {
        first.extend(units);
    }
    assert_eq!(first.len(), 4, "the first pass's writes: {first:?}");
    for (op, _) in &first {
        d.on_complete(Nanos(2), *op, 4096, Nanos::ZERO);
    }
    // fio's fio_io_sync: a flush per file, each waited for, outside the statistics
    for file in 0..2 {
        assert_eq!(poll(&mut d, 3), (Poll::Ready, vec![(Op::Flush, file)]));
        assert!(d.counts_depth(Op::Write) && !d.counts_depth(Op::Flush), "fio leaves it out of the depths");
        assert_eq!(poll(&mut d, 4), (Poll::Blocked, vec![]), "nothing else while it is out");
        assert!(!d.on_complete(Nanos(5), Op::Flush, 0, Nanos::ZERO).counted);
    }
    let (_, second) = poll(&mut d, 6);
    assert!(!second.is_empty() && second.iter().all(|(op, _)| *op == Op::Write), "the second pass: {second:?}");
    assert!(d.counts_depth(Op::Flush), "an fsync=N flush counts again");
}

#[test]
fn fsync_and_end_fsync_with_several_files_follow_fio() {
    let text = "[j]\nsize=24k\nnrfiles=3\nbs=4k\nrw=write\nend_fsync=1\nfsync=4\n";
    let mut d = driver_over_files(text, 3, 8 << 10);
    let (mut out, mut seen) = (Vec::new(), Vec::new());
    for t in 1..100u64 {
        out.clear();
        if d.poll(Nanos(t), &mut out) == Poll::Finished {
            break;
        }
        let issued: Vec<IoUnit> = out.clone();
        for u in &issued {
            let done = d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
            let what = match u.op {
                Op::Flush if done.counted => format!("sync{}", u.file),
                Op::Flush => format!("end{}", u.file),
                _ => format!("w{}:{}", u.file, (u.offset_bytes & 0xfffff) / 4096),
            };
            seen.push(what);
        }
    }
    // fio 3.33's write_iolog (psync): the sync takes the turn of the file due next
    // (file 0 has had its share after its second write, so file 1 follows file 2);
    // end_fsync then syncs every file, outside the statistics (sync total_ios=1)
    let fio = ["w0:0", "w1:0", "w2:0", "w0:1", "sync1", "w2:1", "w1:1", "end0", "end1", "end2"];
    assert_eq!(seen, fio);
}

/// Runs the first job of `text` over `files` files of `file_bytes` each, every request
/// completing at once; what it issued.
fn run_over_files(text: &str, files: u64, file_bytes: u64) -> Vec<IoUnit> {
    let mut d = driver_over_files(text, files, file_bytes);
    let mut out = Vec::new();
    for t in 1..1000u64 {
        let before = out.len();
        if d.poll(Nanos(t), &mut out) == Poll::Finished {
            break;
        }
        for u in &out[before..] {
            d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
            d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
        }
    }
    out
}

/// A job with several files ends when each has had its pass, as fio's does when its
/// files are all done (`bs=3k` over two 32 KiB files: 10 blocks each, 60 KiB of the
/// 64 KiB size), and `verify` reads back file by file in offset order (fio keeps a
/// sequential job's history as a tree): fio 3.33's write_iolog, psync.
#[test]
fn several_files_end_with_their_passes_and_verify_file_by_file() {
    let run =
        |job: &str| -> Vec<(Op, u16)> { run_over_files(job, 2, 32 << 10).iter().map(|u| (u.op, u.file)).collect() };
    let reads = run("[j]\nsize=64k\nnrfiles=2\nbs=3k\nrw=read\nfile_service_type=sequential\n");
    assert_eq!(reads, [[(Op::Read, 0); 10], [(Op::Read, 1); 10]].concat());
    let verified = run("[j]\nsize=64k\nnrfiles=2\nbs=4k\nrw=write\nverify=crc32c\n");
    let writes = [(Op::Write, 0), (Op::Write, 1)].repeat(8);
    assert_eq!(verified, [writes, vec![(Op::Read, 0); 8], vec![(Op::Read, 1); 8]].concat());
}

/// `openfiles=2` of four files: I/O goes round the first two until both are done,
/// then round the other two (fio 3.33's write_iolog, psync, 24 KiB a file).
#[test]
fn openfiles_keeps_io_to_the_files_open() {
    let order = |extra: &str| -> Vec<u16> {
        let text = format!("[j]\nsize=96k\nnrfiles=4\nopenfiles=2\nbs=4k\nrw=read\n{extra}\n");
        run_over_files(&text, 4, 24 << 10).iter().map(|u| u.file).collect()
    };
    let first_two = [0, 1].repeat(6);
    let last_two = [2, 3].repeat(6);
    assert_eq!(order(""), [first_two.clone(), last_two.clone()].concat());
    assert_eq!(order("file_service_type=sequential"), [[0; 6], [1; 6], [2; 6], [3; 6]].concat());
    let pairs = [0, 0, 1, 1].repeat(3);
    let later = [2, 2, 3, 3].repeat(3);
    assert_eq!(order("file_service_type=roundrobin:2"), [pairs, later].concat());
}

/// The operations `run_over_files` issues, as fio's write_iolog lists them: `w1` a
/// write to file 1, `S0` a flush of file 0.
fn ops_over_files(text: &str, files: u64, file_bytes: u64) -> String {
    let ops: Vec<String> =
        run_over_files(text, files, file_bytes).iter().map(|u| format!("{}{}", op_letter(u.op), u.file)).collect();
    ops.join(" ")
}

/// An operation as these tests write it: `r`, `w`, `S` (a flush), `t` (a trim).
fn op_letter(op: Op) -> char {
    match op {
        Op::Read => 'r',
        Op::Write => 'w',
        Op::Flush => 'S',
        _ => 't',
    }
}

/// With `randrepeat` (fio's default) every loop draws what the first drew, as fio
/// re-seeds its generators between two runs of do_io: fio 3.33's write_iolog for
/// `rw=randrw size=32k loops=2` (psync) reads and writes the same 8 blocks in the same
/// order twice, also over two files; a time-based job's passes do not repeat.
#[test]
fn every_loop_repeats_the_first_with_randrepeat() {
    let passes = |text: &str, files: u64| -> Vec<Vec<(Op, u16, u64)>> {
        let units = run_over_files(text, files, 32 << 10);
        let per_pass = (32 << 10) * files as usize / 4096;
        units
            .iter()
            .map(|u| (u.op, u.file, u.offset_bytes))
            .collect::<Vec<_>>()
            .chunks(per_pass)
            .map(<[_]>::to_vec)
            .collect()
    };
    for (text, files) in [
        ("[j]\nsize=32k\nbs=4k\nrw=randrw\nloops=3\n", 1),
        ("[j]\nsize=64k\nnrfiles=2\nbs=4k\nrw=randread\nloops=2\n", 2),
        // fio 3.33: `rw=read nrfiles=3 file_service_type=random loops=2` repeats its
        // order of files too
        ("[j]\nsize=96k\nnrfiles=3\nbs=4k\nrw=read\nfile_service_type=random\nloops=2\n", 3),
        ("[j]\nsize=32k\nbs=4k\nrw=randwrite\nloops=2\nioengine=libaio\niodepth=4\n", 1),
    ] {
        let p = passes(text, files);
        assert!(p.len() >= 2, "{text}");
        assert!(p.windows(2).all(|w| w[0] == w[1]), "{text}: {p:?}");
        let mut first = p[0].clone();
        first.sort_by_key(|&(_, f, o)| (f, o));
        first.dedup_by_key(|u| (u.1, u.2));
        assert_eq!(first.len(), p[0].len(), "{text}: a pass covers every block once");
    }
    for engine in ["psync", "libaio"] {
        let text = format!("[j]\nsize=32k\nbs=4k\nrw=randread\nloops=2\nrandrepeat=0\nioengine={engine}\n");
        let again = passes(&text, 1);
        assert!(again.len() == 2 && again[0] != again[1], "{engine}: randrepeat=0 draws on");
    }
    let timed = passes("[j]\nsize=32k\nbs=4k\nrw=randread\ntime_based\nruntime=1s\n", 1);
    assert!(timed.len() > 2 && timed.windows(2).any(|w| w[0] != w[1]), "a time-based job draws on");
}

/// fio finds a file done only when it asks it for the next block and none fits:
/// closed, it gives its `openfiles` slot to the next, and round robin goes on from
/// where it stopped. The orders are fio 3.33's write_iolog (psync).
#[test]
fn a_file_is_done_when_asked_for_a_block_it_has_not() {
    // a flush takes the turn of the file it goes to; files 0 and 1 are found done
    // after it, so file 2 comes before the file 3 just opened
    let ops = ops_over_files("[j]\nsize=96k\nnrfiles=4\nopenfiles=3\nbs=4k\nrw=write\nfsync=5\n", 4, 24 << 10);
    let fio = "w0 w1 w2 w0 w1 S2 w0 w1 w2 w0 w1 S2 w0 w1 w2 w0 w1 S2 w2 w3 w2 w3 w2 S3 w3 w3 w3 w3";
    assert_eq!(ops, fio);
    // the second flush of a loop's end is the first request of the next, taking the
    // turn of the file round robin reached
    let ops = ops_over_files("[j]\nsize=64k\nnrfiles=2\nbs=4k\nrw=write\nfsync=8\nloops=2\n", 2, 32 << 10);
    let pass = "w0 w1 w0 w1 w0 w1 w0 w1 S0 w1 w0 w1 w0 w1 w0 w1 w0 S1";
    let second = "S0 w1 w0 w1 w0 w1 w0 w1 w0 S1 w0 w1 w0 w1 w0 w1 w0 w1";
    assert_eq!(ops, format!("{pass} {second}"));
    // a forward skip that goes round within each file never finds one done: the job
    // ends by its size (fio reads 25 blocks of 4 KiB from three files of 34133 bytes)
    let reads = run_over_files("[j]\nsize=100k\nnrfiles=3\nbs=4k\nrw=read:8k\n", 3, 34_133);
    assert_eq!(reads.len(), 25);
    // a flush falls due after the last block of the last file: the job, short of its
    // size, asks for another block (fio: eight writes to file 2, then S2)
    let ops = ops_over_files("[j]\nsize=100k\nnrfiles=3\nopenfiles=2\nbs=4k\nrw=write\nfsync=8\n", 3, 34_133);
    assert!(ops.ends_with("S1 w2 w2 w2 w2 w2 w2 w2 w2 S2"), "{ops}");
}

/// Blocks (4 KiB) of one file the job issues, each completing at once: `w3` a write of
/// block 3, `r0` a read, `S` a flush.
fn blocks_over_file(text: &str, file_bytes: u64) -> String {
    let units = run_over_files(text, 1, file_bytes);
    let op = |u: &IoUnit| match u.op {
        Op::Read | Op::Write => format!("{}{}", op_letter(u.op), (u.offset_bytes & 0xfffff) / 4096),
        _ => op_letter(u.op).to_string(),
    };
    units.iter().map(op).collect::<Vec<_>>().join(" ")
}

/// fio's do_io ends a pass where its files are done, at the job's limit, or, with an
/// asynchronous engine, after `size` bytes issued (its count leaves out what a sync
/// engine completes at once); the next pass starts over at the start of the file, and
/// a loop left with nothing to issue still flushes. fio 3.33's write_iolog.
#[test]
fn passes_end_where_fios_do_io_ends() {
    let job = "[j]\nrw=write\nbs=4k\nsize=16k\nloops=2\nend_fsync=1\n";
    assert_eq!(blocks_over_file(job, 32 << 10), "w0 w1 w2 w3 w4 w5 w6 w7 S S");
    let job = format!("{job}ioengine=libaio\n");
    assert_eq!(blocks_over_file(&job, 32 << 10), "w0 w1 w2 w3 S w0 w1 w2 w3 S");
    // a loop that issues nothing flushes and ends the job, as fio's empty do_io
    // terminates its thread: `number_ios` is reached by the first loop's read-back
    let job = "[j]\nrw=write\nbs=4k\nsize=16k\nfilesize=32k\nloops=3\nend_fsync=1\nverify=crc32c\nnumber_ios=3\n";
    let fio = "w0 w1 w2 w3 w4 w5 w6 w7 S r0 r1 r2 r3 r4 r5 r6 r7 S";
    assert_eq!(blocks_over_file(job, 32 << 10), fio);
    // keep_running counts the read-back's bytes toward io_size: two passes of 16 KiB
    // written and read make 64 KiB, past the 40 KiB asked for
    let job = "[j]\nrw=write\nbs=4k\nsize=16k\nio_size=40k\nverify=crc32c\n";
    assert_eq!(blocks_over_file(job, 16 << 10), "w0 w1 w2 w3 r0 r1 r2 r3 w0 w1 w2 w3 r0 r1 r2 r3");
    assert_eq!(blocks_over_file("[j]\nrw=write\nbs=4k\nsize=16k\nio_size=40k\n", 16 << 10).split(' ').count(), 10);
    // the read-back leaves the file not done, so the job goes on while its size is
    // owed, its reads counted (fio: 2 blocks written and read, twice, as the skip
    // leaves no room for a third in 16 KiB); fio's number_ios counts the reads too
    let job = "[j]\nrw=write:4k\nbs=3k\nsize=16k\nverify=crc32c\n";
    assert_eq!(blocks_over_file(job, 16 << 10), "w0 w1 r0 r1 w0 w1 r0 r1");
    let job = "[j]\nrw=write\nbs=4k\nsize=8k\nloops=3\nnumber_ios=3\nverify=crc32c\nend_fsync=1\n";
    assert_eq!(blocks_over_file(job, 8 << 10), "w0 w1 S r0 r1 w0 w1 S r0 r1 w0 S r0");
    // a random job with a map reads back in the order written, at the job's end too
    let ops = blocks_over_file("[j]\nrw=randwrite\nbs=4k\nsize=32k\nverify=crc32c\n", 32 << 10);
    let (writes, reads) = ops.split_at(ops.find('r').unwrap());
    assert_eq!(writes.trim().replace('w', ""), reads.trim().replace('r', ""));
}

#[test]
fn several_files_are_served_in_fios_order() {
    // fio 3.33's write_iolog for nrfiles=3, size=48k, bs=4k, rw=write (psync)
    let rr = [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2), (0, 3), (1, 3), (2, 3)];
    assert_eq!(file_order("roundrobin"), rr);
    let seq = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3)];
    assert_eq!(file_order("sequential"), seq);
    let rr2 = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 2), (2, 3)];
    assert_eq!(file_order("roundrobin:2"), rr2);
    // random: fio's draws differ, but each file gets its four blocks, in order
    let random = file_order("random");
    assert_eq!(random.len(), 12);
    for f in 0..3 {
        let blocks: Vec<u64> = random.iter().filter(|(file, _)| *file == f).map(|(_, b)| *b).collect();
        assert_eq!(blocks, [0, 1, 2, 3], "{random:?}");
    }
    assert_ne!(random, rr, "random is not round robin");
}

/// I/Os per file of eight-file job `text` whose files are `file_len` bytes each,
/// completing each at once, over at most `ticks` polls or until the job finishes.
fn ios_per_file(text: &str, file_len: u64, ticks: u64) -> [u32; 8] {
    let spec = parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
    let regions: Vec<Region> = (0..8).map(|k| Region::new(k * file_len, file_len)).collect();
    let mut d = JobDriver::new(Arc::new(spec), 0, &regions, 7).unwrap();
    d.start(Nanos::ZERO);
    let (mut out, mut counts) = (Vec::new(), [0u32; 8]);
    for t in 1..=ticks {
        out.clear();
        if d.poll(Nanos(t), &mut out) == Poll::Finished {
            break;
        }
        for u in &out {
            counts[u.file as usize] += 1;
            d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
        }
    }
    counts
}

/// `file_service_type=zipf|pareto|normal`: each I/O's file drawn from the distribution
/// without fio's hash, so the hot ranks share a file. fio 3.33, eight 10 MiB files,
/// 2000 random reads (write_iolog), files by share: zipf:1.2 90.8%, 3.4%, ...;
/// normal:10 42.4%, 42.2%, 8.2%, 6.9%, ... (two neighbouring files).
#[test]
fn skewed_file_service_draws_each_file_from_the_distribution() {
    let shares = |service: &str| -> Vec<f64> {
        let text = format!("[j]\nsize=80m\nnrfiles=8\nbs=4k\nrw=randread\nfile_service_type={service}\n");
        let counts = ios_per_file(&text, 10 << 20, 2000);
        let total: u32 = counts.iter().sum();
        let mut shares: Vec<f64> = counts.iter().map(|&c| f64::from(c) / f64::from(total)).collect();
        shares.sort_by(|a, b| b.total_cmp(a));
        shares
    };
    let zipf = shares("zipf:1.2");
    assert!(zipf[0] > 0.85 && zipf[1] < 0.06, "{zipf:?}");
    let normal = shares("normal:10");
    assert!(normal[0] > 0.35 && normal[1] > 0.35 && normal[2] + normal[3] > 0.1 && normal[4] < 0.01, "{normal:?}");
    let uniform = shares("random");
    assert!(uniform[0] < 0.16, "{uniform:?}");
    // a hot file whose pass is used up starts over, as fio resets it: a size-based
    // job of eight 1 MiB files still ends after its 2048 I/Os, 90% of them in one
    // file (fio 3.33: 2048 reads, 90.9% in one file)
    let text = "[j]\nsize=8m\nnrfiles=8\nbs=4k\nrw=randread\nfile_service_type=zipf:1.2\n";
    let counts = ios_per_file(text, 1 << 20, 10_000);
    assert_eq!(counts.iter().sum::<u32>(), 2048, "{counts:?}");
    assert!(*counts.iter().max().unwrap() > 1800, "{counts:?}");
}

#[test]
fn thinktime_blocks_issue_then_wait_for_completion_then_pause() {
    let mut d = driver("[a]\nioengine=io_uring\niodepth=32\nrw=randread\nthinktime=1000\nthinktime_blocks=8\nthinktime_blocks_type=issue\nruntime=1\ntime_based\n");
    let mut out = Vec::new();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    assert_eq!(out.len(), 8, "thinktime_blocks caps what is out, not iodepth");
    for i in 1..=7u64 {
        d.on_complete(Nanos(i * 1000), Op::Read, 4096, Nanos::ZERO);
        assert_eq!(d.poll(Nanos(i * 1000), &mut out), Poll::Blocked, "waits for all 8 (fio's quiesce)");
    }
    d.on_complete(Nanos(9_000), Op::Read, 4096, Nanos::ZERO);
    assert_eq!(d.poll(Nanos(9_000), &mut out), Poll::WaitUntil(Nanos(1_009_000)), "then thinks");
    out.clear();
    while d.poll(Nanos(1_009_000), &mut out) == Poll::Ready {}
    assert_eq!(out.len(), 8);
}

/// fio's default `thinktime_blocks_type=complete`: the queue fills, the job issues
/// one more per completion until 8 have completed, then waits for the rest and
/// pauses; what completed while it waited counts toward the next pause, which comes
/// after one more I/O (fio's handle_thinktime takes the count before it quiesces).
#[test]
fn thinktime_blocks_completed_lets_the_queue_fill_and_counts_what_completes_while_waiting() {
    let mut d = driver(
        "[a]\nioengine=io_uring\niodepth=32\nrw=randread\nthinktime=1000\nthinktime_blocks=8\nruntime=1\ntime_based\n",
    );
    let mut out = Vec::new();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    assert_eq!(out.len(), 32, "nothing has completed: the queue fills");
    for i in 1..=8u64 {
        d.on_complete(Nanos(i * 1000), Op::Read, 4096, Nanos::ZERO);
        let poll = d.poll(Nanos(i * 1000), &mut out);
        assert_eq!(poll == Poll::Ready, i < 8, "completion {i}: one more goes out until 8 have come back");
    }
    assert_eq!(out.len(), 32 + 7);
    for i in 9..=39u64 {
        d.on_complete(Nanos(i * 1000), Op::Read, 4096, Nanos::ZERO);
        let poll = d.poll(Nanos(i * 1000), &mut out);
        if i < 39 {
            assert_eq!(poll, Poll::Blocked, "waits for all out (fio's quiesce)");
        } else {
            assert_eq!(poll, Poll::WaitUntil(Nanos(1_039_000)), "then thinks");
        }
    }
    out.clear();
    assert_eq!(d.poll(Nanos(1_039_000), &mut out), Poll::Ready);
    assert_eq!(out.len(), 1, "31 completed while it waited: the next pause is due after one more");
    d.on_complete(Nanos(1_040_000), Op::Read, 4096, Nanos::ZERO);
    assert_eq!(d.poll(Nanos(1_040_000), &mut out), Poll::WaitUntil(Nanos(2_040_000)));
    // a synchronous engine: its I/O completes before fio checks, one I/O per pause
    let mut d = driver("[a]\nrw=randread\nthinktime=1000\nruntime=1\ntime_based\n");
    out.clear();
    assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Ready);
    d.on_complete(Nanos(100), Op::Read, 4096, Nanos::ZERO);
    assert_eq!(d.poll(Nanos(100), &mut out), Poll::WaitUntil(Nanos(1_000_100)), "one I/O, then the pause");
}

#[test]
fn iodepth_low_lets_a_full_queue_drain_before_refilling_it() {
    let mut d = driver("[a]\nioengine=io_uring\niodepth=16\niodepth_low=4\nrw=randread\nruntime=1\ntime_based\n");
    let mut out = Vec::new();
    for round in 0..3u64 {
        out.clear();
        while d.poll(Nanos(round), &mut out) == Poll::Ready {}
        assert_eq!(d.inflight(), 16, "round {round}: fills the queue");
        for left in (4..16).rev() {
            d.on_complete(Nanos(round), Op::Read, 4096, Nanos::ZERO);
            let poll = d.poll(Nanos(round), &mut out);
            assert_eq!(poll == Poll::Ready, left == 4, "issues again at {left} out");
            if poll == Poll::Ready {
                break;
            }
        }
    }
    // without it the queue is topped up after every completion
    let mut d = driver("[a]\nioengine=io_uring\niodepth=16\nrw=randread\nruntime=1\ntime_based\n");
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    d.on_complete(Nanos(1), Op::Read, 4096, Nanos::ZERO);
    assert_eq!(d.poll(Nanos(1), &mut out), Poll::Ready);
}

#[test]
fn iodepth_batch_complete_min_waits_for_that_many_completions() {
    // (iodepth, iodepth_low, iodepth_batch_complete_min) -> requests out when fio is
    // done reaping a full queue
    assert_eq!(reap_until(16, 0, 1), 15);
    assert_eq!(reap_until(16, 0, 6), 10);
    assert_eq!(reap_until(16, 4, 1), 4);
    assert_eq!(reap_until(16, 4, 5), 1, "16, 11, 6, 1: whole batches until at most 4 are out");
    assert_eq!(reap_until(16, 4, 0), 4, "0 reaps one at a time, as fio does on a full queue");
    assert_eq!(reap_until(4, 0, 8), 0, "at most what is out");
    let mut d = driver(
        "[a]\nioengine=io_uring\niodepth=16\niodepth_batch_complete_min=6\nrw=randread\nruntime=1\ntime_based\n",
    );
    let mut out = Vec::new();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    assert_eq!(d.inflight(), 16);
    for left in (10..16).rev() {
        d.on_complete(Nanos(1), Op::Read, 4096, Nanos::ZERO);
        let poll = d.poll(Nanos(1), &mut out);
        assert_eq!(poll == Poll::Ready, left == 10, "issues again at {left} out");
    }
    while d.poll(Nanos(1), &mut out) == Poll::Ready {}
    assert_eq!(d.inflight(), 16, "and fills the queue again");
}

#[test]
fn thinktime_iotime_pauses_after_issuing_for_that_long() {
    // each I/O completes 1 us after it is issued; 20 ms pauses after 80 ms of issuing
    let mut d = driver("[a]\nrw=randread\nthinktime=20ms\nthinktime_iotime=80ms\nruntime=1\ntime_based\n");
    let (mut t, mut out, mut issued_at) = (Nanos::ZERO, Vec::new(), Vec::new());
    loop {
        out.clear();
        match d.poll(t, &mut out) {
            Poll::Ready => {
                issued_at.push(t);
                t += Nanos::from_us(1);
                d.on_complete(t, Op::Read, 4096, Nanos::from_us(1));
            }
            Poll::WaitUntil(w) => t = w,
            _ => break,
        }
    }
    let gaps: Vec<(Nanos, Nanos)> =
        issued_at.windows(2).filter(|w| w[1] - w[0] > Nanos::from_us(1)).map(|w| (w[0], w[1] - w[0])).collect();
    assert_eq!(gaps.len(), 9, "the tenth pause is cut off by the runtime: {gaps:?}");
    for (i, (at, gap)) in gaps.iter().enumerate() {
        assert_eq!(*gap, Nanos::from_ms(20) + Nanos::from_us(1), "pause {i}");
        // the stretch of issuing before pause i began at the end of pause i - 1
        let began = if i == 0 { Nanos::ZERO } else { gaps[i - 1].0 + gaps[i - 1].1 };
        assert_eq!(*at - began, Nanos::from_ms(80), "pause {i} comes after 80 ms of issuing");
    }
}

#[test]
fn number_ios_and_loops_bound_the_io() {
    let count = |text: &str| run_to_end(&mut driver(text)).0.len();
    assert_eq!(count("[a]\nrw=randread\nsize=1m\n"), 256);
    assert_eq!(count("[a]\nrw=randread\nsize=1m\nloops=3\n"), 768);
    assert_eq!(count("[a]\nrw=read\nsize=1m\nnumber_ios=100\n"), 100);
    // fio 3.33: number_ios counts per loop, and a time-based job loops until its runtime
    assert_eq!(count("[a]\nrw=read\nsize=1m\nnumber_ios=100\nloops=3\n"), 300);
    assert_eq!(count("[a]\nrw=read\nsize=1m\nnumber_ios=300\nloops=2\n"), 512, "each loop ends with its pass");
    assert!(count("[a]\nioengine=io_uring\niodepth=8\nrw=randread\nruntime=10ms\ntime_based\nnumber_ios=50\n") > 1000);
    assert_eq!(count("[a]\nrw=read\nsize=1m\nnumber_ios=1000\n"), 256, "size comes first");
}

/// A size-based job ends with its pass over the region, as fio's, even short of its
/// size: a block that would pass the end is not done, and mixed sizes shrink to fit
/// it. The counts are fio 3.33's on a 1 MiB file (psync; fio's own draws differ, so
/// mixed sizes are checked by bytes and coverage, not counts).
#[test]
fn a_pass_ends_at_the_region_end_as_fio() {
    let region = Region::new(0, 1 << 20);
    let units = |job: &str| {
        let text = format!("[a]\nsize=1m\n{job}\n");
        let spec = parse_job_str(&text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
        let mut d = JobDriver::new(Arc::new(spec), 0, &[region], 1).unwrap();
        d.start(Nanos::ZERO);
        let (mut out, mut t) = (Vec::new(), Nanos::ZERO);
        loop {
            let before = out.len();
            match d.poll(t, &mut out) {
                Poll::Finished => break out,
                Poll::Ready => {
                    for u in &out[before..] {
                        t += Nanos(1_000);
                        d.on_complete(t, u.op, u.len_bytes, Nanos::ZERO);
                    }
                }
                other => panic!("{job}: {other:?}"),
            }
        }
    };
    // (job, I/Os as fio, bytes as fio, every 4 KiB block once per pass)
    let cases: [(&str, Option<usize>, u64, bool); 14] = [
        ("rw=read\nbs=3k", Some(341), 341 * 3072, false),
        ("rw=randread\nbs=3k", Some(341), 341 * 3072, false),
        ("rw=read\nbs=3k\nloops=2", Some(682), 682 * 3072, false),
        ("rw=randread\nbs=3k\nloops=2", Some(682), 682 * 3072, false),
        ("rw=read\nbs=3k\nio_size=3m", Some(1024), 3 << 20, false),
        // io_size over size with loops: the passes end it at io_size, not io_size x loops
        ("rw=read\nbs=4k\nio_size=2m\nloops=2", Some(512), 2 << 20, false),
        // a forward skip ends the pass once a block reached the end: 4k of every 12k;
        // from a block short of the end it goes round again (fio's holed I/O)
        ("rw=write:8k\nbs=4k", Some(86), 86 * 4096, false),
        ("rw=read:4k\nbs=4k", Some(256), 1 << 20, false),
        // a skip that stops short of the end, where the next block does not fit, ends it
        ("rw=read:4k\nbs=8k", Some(85), 85 * 8192, false),
        ("rw=read\nbs=4k\nio_size=50%", Some(128), 1 << 19, false),
        ("rw=read\nbssplit=4k/50:64k/50\nloops=2", None, 2 << 20, false),
        ("rw=read\nbsrange=4k-64k", None, 1 << 20, true),
        ("rw=randread\nbssplit=4k/50:64k/50", None, 1 << 20, true),
        ("rw=randread\nbsrange=4k-16k", None, 1 << 20, true),
    ];
    for (job, ios, bytes, once) in cases {
        let units = units(job);
        assert!(units.iter().all(|u| u.offset_bytes + u64::from(u.len_bytes) <= region.len), "{job}");
        assert_eq!(units.iter().map(|u| u64::from(u.len_bytes)).sum::<u64>(), bytes, "{job}");
        if let Some(ios) = ios {
            assert_eq!(units.len(), ios, "{job}");
        }
        if once {
            let mut covered = vec![0u32; 256];
            for u in &units {
                (u.offset_bytes / 4096..(u.offset_bytes + u64::from(u.len_bytes)) / 4096)
                    .for_each(|b| covered[b as usize] += 1);
            }
            assert!(covered.iter().all(|&c| c == 1), "{job}: {covered:?}");
        }
    }
    // a time-based job goes on over the end, and a random one past its map's pass
    let timed = units("rw=read\nbs=3k\ntime_based\nruntime=1ms");
    assert_eq!(timed.len(), 1000, "one per microsecond");
    assert_eq!(timed[341].offset_bytes, 0, "after 341 blocks it wraps");
}

/// Runs a job to its end, completing the oldest request in flight each step; returns
/// how many I/Os it issued and the most that overlapped one another at once.
fn run_fifo(text: &str) -> (u64, usize) {
    let spec = parse_job_str(text, Path::new("t.fio"), &env(), ParseOptions::default()).unwrap().jobs.remove(0);
    let mut d = JobDriver::new(Arc::new(spec), 0, &[Region::new(0, 16384)], 1).unwrap();
    d.start(Nanos::ZERO);
    let (mut in_flight, mut out) = (std::collections::VecDeque::new(), Vec::new());
    let (mut issued, mut most_overlapping, mut t) = (0u64, 0usize, 0u64);
    loop {
        t += 1000;
        let mut poll = d.poll(Nanos(t), &mut out);
        while poll == Poll::Ready {
            poll = d.poll(Nanos(t), &mut out);
        }
        issued += out.len() as u64;
        in_flight.extend(out.drain(..));
        let overlapping = in_flight
            .iter()
            .filter(|u: &&IoUnit| {
                in_flight.iter().filter(|v| v.offset_bytes == u.offset_bytes && v.file == u.file).count() > 1
            })
            .count();
        most_overlapping = most_overlapping.max(overlapping);
        if poll == Poll::Finished {
            return (issued, most_overlapping);
        }
        if let Some(u) = in_flight.pop_front() {
            d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
            d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
        }
    }
}

/// Runs a job to its end, completing each batch as it is issued; returns its I/Os.
fn run_batches(text: &str) -> Vec<IoUnit> {
    run_batches_to_end(text).1
}

/// Runs the first job of `text`, each batch completing 1 µs after it is issued: the
/// driver, what it issued, and when it finished.
fn run_batches_to_end(text: &str) -> (JobDriver, Vec<IoUnit>, Nanos) {
    let mut d = driver(text);
    let (mut all, mut out, mut t) = (Vec::new(), Vec::new(), 0u64);
    while t < 1 << 40 {
        t += 1000;
        let mut poll = d.poll(Nanos(t), &mut out);
        while poll == Poll::Ready {
            poll = d.poll(Nanos(t), &mut out);
        }
        if poll == Poll::Finished {
            break;
        }
        for u in out.drain(..) {
            d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
            d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
            all.push(u);
        }
    }
    assert!(out.is_empty() && d.finished_at().is_some());
    let end = d.finished_at().unwrap();
    (d, all, end)
}

#[test]
fn a_verifying_job_times_its_writes_over_its_write_phases_and_its_reads_over_its_read_backs() {
    let job = "[a]\nioengine=io_uring\niodepth=4\nrw=write\nsize=64k\nverify=crc32c\nloops=2\n";
    let (d, ios, end) = run_batches_to_end(job);
    // two passes of 16 writes, each read back: 4 batches each, 1 µs apart
    assert_eq!(runs(&ios), [(Op::Write, 16), (Op::Read, 16)].repeat(2));
    let [reads, writes, trims] = d.direction_runtimes(end, end).unwrap();
    assert_eq!((reads + writes, trims), (end, Nanos::ZERO));
    assert!(reads >= Nanos::from_us(6) && writes >= Nanos::from_us(6), "{reads:?} {writes:?} of {end:?}");
    // a job that reads as well reads the whole time
    let (d, _, end) = run_batches_to_end("[a]\nioengine=io_uring\niodepth=4\nrw=randrw\nsize=64k\nverify=crc32c\n");
    let [reads, writes, _] = d.direction_runtimes(end, end).unwrap();
    assert!(reads == end && writes < end && writes > Nanos::ZERO, "{reads:?} {writes:?} of {end:?}");
    // verify_backlog's read-backs within a pass are part of it; only the end's is not
    let (d, ios, end) = run_batches_to_end(&format!("{job}verify_backlog=4\n"));
    let [reads, _, _] = d.direction_runtimes(end, end).unwrap();
    assert!(ios.iter().filter(|u| u.op == Op::Read).count() >= 32);
    assert!(reads <= Nanos::from_us(4), "the read-backs between and after the passes: {reads:?} of {end:?}");
    // the batch that the last writes complete is not read back between them but at the
    // end, as fio fetches no I/O after the last: the reads' time is that read-back's
    // (fio 3.33, 64 MiB of 4 KiB random writes with verify_backlog=1024: 64 MiB read in
    // 12 ms, the last 1024 blocks)
    let once = "[a]\nioengine=io_uring\niodepth=4\nrw=write\nsize=64k\nverify=crc32c\nverify_backlog=4\n";
    let (d, ios, end) = run_batches_to_end(once);
    assert_eq!(runs(&ios), [(Op::Write, 4), (Op::Read, 4)].repeat(4));
    let [reads, _, _] = d.direction_runtimes(end, end).unwrap();
    assert!(reads >= Nanos::from_us(1), "the last batch's read-back: {reads:?} of {end:?}");
    // without a read-back every direction runs the whole time
    let (d, _, end) = run_batches_to_end("[a]\nioengine=io_uring\niodepth=4\nrw=write\nsize=64k\n");
    assert_eq!(d.direction_runtimes(end, end), None);
    // a read-back under way (`--status-interval`) counts up to the moment asked
    let mut d = driver("[a]\nioengine=io_uring\niodepth=4\nrw=write\nsize=16k\nverify=crc32c\n");
    let mut out = Vec::new();
    let mut t = Nanos::ZERO;
    while !out.iter().any(|u: &IoUnit| u.op == Op::Read) {
        for u in out.drain(..) {
            d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
            d.on_complete(t, u.op, u.len_bytes, Nanos::ZERO);
        }
        t += Nanos::from_us(1);
        while d.poll(t, &mut out) == Poll::Ready {}
    }
    let later = t + Nanos::from_us(5);
    assert_eq!(d.direction_runtimes(later, later).unwrap()[0], Nanos::from_us(5));
}

#[test]
fn verify_reads_back_the_last_write_of_each_block_after_the_writes() {
    let job = "[a]\nioengine=io_uring\niodepth=4\nrw=randwrite\nsize=64k\nbsrange=4k-8k\nverify=crc32c\n";
    let ios = run_batches(job);
    let writes: Vec<&IoUnit> = ios.iter().filter(|u| u.op == Op::Write).collect();
    let reads: Vec<&IoUnit> = ios.iter().filter(|u| u.op == Op::Read).collect();
    let first_read = ios.iter().position(|u| u.op == Op::Read).unwrap();
    assert!(ios[first_read..].iter().all(|u| u.op == Op::Read), "the reads come after every write");
    assert!(!reads.is_empty() && reads.len() <= writes.len());
    // as fio's history list holds them: each block is written once, read back in
    // the order written
    let order = |ios: &[&IoUnit]| ios.iter().map(|u| (u.offset_bytes, u.len_bytes)).collect::<Vec<_>>();
    assert_eq!(order(&reads), order(&writes));
    let job = format!("{job}norandommap\n");
    let ios = run_batches(&job);
    let writes: Vec<&IoUnit> = ios.iter().filter(|u| u.op == Op::Write).collect();
    let reads: Vec<&IoUnit> = ios.iter().filter(|u| u.op == Op::Read).collect();
    for r in &reads {
        // norandommap: each read is a block as it was last written, in offset order
        let last = writes
            .iter()
            .rev()
            .find(|w| {
                w.offset_bytes < r.offset_bytes + u64::from(r.len_bytes)
                    && r.offset_bytes < w.offset_bytes + u64::from(w.len_bytes)
            })
            .unwrap();
        assert_eq!((last.offset_bytes, last.len_bytes), (r.offset_bytes, r.len_bytes));
    }
    assert!(reads.windows(2).all(|p| p[0].offset_bytes < p[1].offset_bytes));
    assert!(run_batches(&format!("{job}do_verify=0\n")).iter().all(|u| u.op == Op::Write));
    // verify_only: every block of the region, nothing written
    let only = run_batches(&format!("{job}verify_only=1\nbs=4k\n"));
    assert_eq!(only.len(), (1 << 30) / 4096);
    assert!(only.iter().all(|u| u.op == Op::Read && u.len_bytes == 4096));
}

/// Runs of one direction in the order issued: (op, how many).
fn runs(ios: &[IoUnit]) -> Vec<(Op, usize)> {
    let mut runs: Vec<(Op, usize)> = Vec::new();
    for u in ios {
        match runs.last_mut() {
            Some((op, n)) if *op == u.op => *n += 1,
            _ => runs.push((u.op, 1)),
        }
    }
    runs
}

#[test]
fn verify_backlog_reads_back_the_oldest_writes_every_so_many() {
    let job = "[a]\nioengine=io_uring\niodepth=8\nrw=randwrite\nsize=256k\nverify=crc32c\nverify_backlog=16\n";
    let ios = run_batches(job);
    // as fio 3.33's iolog shows for this job: 16 writes, their 16 blocks read back, ...
    let (w, r) = (Op::Write, Op::Read);
    assert_eq!(runs(&ios), [(w, 16), (r, 16)].repeat(4));
    // in the order they were written (fio's history is a list when each block is
    // written once per pass)
    let offsets = |r: std::ops::Range<usize>| ios[r].iter().map(|u| u.offset_bytes).collect::<Vec<_>>();
    assert_eq!(offsets(16..32), offsets(0..16));
    // a smaller batch leaves the rest to the end
    let ios = run_batches(&format!("{job}verify_backlog_batch=4\n"));
    let mut expected = [(w, 16), (r, 4)].repeat(4);
    expected[7] = (r, 4 + 12 * 4);
    assert_eq!(runs(&ios), expected);
    // fio reads back nothing without do_verify, backlog included
    assert!(run_batches(&format!("{job}do_verify=0\n")).iter().all(|u| u.op == w));
}

/// fio 3.33's iologs: a job verifies after each pass over its size (`loops`, and
/// `time_based` passes too), and its runtime ends the read-back as it ends its I/O.
#[test]
fn verify_reads_back_after_each_pass_within_the_runtime() {
    let (w, r) = (Op::Write, Op::Read);
    let job = "[a]\nioengine=io_uring\niodepth=4\nrw=randwrite\nsize=64k\nverify=crc32c\n";
    assert_eq!(runs(&run_batches(&format!("{job}loops=3\n"))), [(w, 16), (r, 16)].repeat(3));
    let timed = runs(&run_batches(&format!("{job}time_based\nruntime=100us\n")));
    assert!(timed.len() > 6, "{timed:?}");
    let (last, whole) = timed.split_last().unwrap();
    assert!(whole.chunks(2).all(|c| c[0] == (w, 16) && c.get(1).is_none_or(|&x| x == (r, 16))), "{timed:?}");
    assert!(last.1 <= 16, "the runtime cuts the last pass or read-back short: {timed:?}");
    // cut short by its runtime before its size is written: nothing is read back
    let cut = run_batches("[a]\nioengine=io_uring\niodepth=4\nrw=randwrite\nsize=1g\nverify=crc32c\nruntime=50us\n");
    assert!(!cut.is_empty() && cut.iter().all(|u| u.op == w));
}

#[test]
fn verify_only_walks_every_block_of_each_file_without_listing_them() {
    let w = RegionWalk::new(&[Region::new(4096, 8192), Region::new(0, 12288)], 4096);
    let all: Vec<_> = (0..5).map(|i| w.block(i)).collect();
    assert_eq!(all, [(0, 4096, 4096), (0, 8192, 4096), (1, 0, 4096), (1, 4096, 4096), (1, 8192, 4096)]);
    let v = VerifyPass { walk: Some(w), ..VerifyPass::default() };
    assert_eq!(v.listed(), 5);
}

#[test]
fn create_only_issues_nothing_not_even_the_end_flush() {
    let mut d = driver("[a]\nrw=write\nsize=1m\nend_fsync=1\ncreate_only=1\n");
    assert_eq!(d.poll(Nanos::ZERO, &mut Vec::new()), Poll::Finished);
    let mut d = driver("[a]\nrw=write\nsize=1m\nend_fsync=1\n");
    assert_eq!(d.poll(Nanos::ZERO, &mut Vec::new()), Poll::Ready);
}

#[test]
fn a_fill_ends_at_enospc_without_an_error_and_lands_what_is_in_flight() {
    const ENOSPC: i32 = 28;
    let mut d = driver("[a]\nioengine=io_uring\niodepth=4\nrw=write\nfill_device=1\nend_fsync=1\n");
    let mut out = Vec::new();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    assert_eq!(out.len(), 4);
    let done = d.on_error(Nanos(10), Op::Write, ENOSPC);
    assert!(done.failed.is_none(), "ENOSPC ends a fill, it does not fail it");
    // the writes in flight still count; nothing more is written, the end flush is owed
    assert!((1..4).all(|k| d.on_complete(Nanos(10 + k), Op::Write, 4096, Nanos::ZERO).counted));
    out.clear();
    assert_eq!(d.poll(Nanos(20), &mut out), Poll::Ready);
    assert_eq!(out.iter().map(|u| u.op).collect::<Vec<_>>(), [Op::Flush]);
    // a second ENOSPC (the flush's) is no error either
    assert!(d.on_error(Nanos(30), Op::Flush, ENOSPC).failed.is_none());
    assert_eq!(d.poll(Nanos(30), &mut out), Poll::Finished);
    // without fill_device, ENOSPC fails the job
    let mut d = driver("[a]\nioengine=io_uring\niodepth=4\nrw=write\n");
    d.poll(Nanos::ZERO, &mut Vec::new());
    assert_eq!(d.on_error(Nanos(10), Op::Write, ENOSPC).failed, Some(Failure::Io(ENOSPC)));
}

#[test]
fn serialize_overlap_keeps_overlapping_ios_apart() {
    let job = "[a]\nioengine=io_uring\niodepth=8\nrw=randwrite\nnorandommap\nio_size=800k\n";
    let (issued, overlapping) = run_fifo(job);
    assert_eq!(issued, 200);
    assert_eq!(overlapping, 8, "four blocks, eight in flight: writes overlap without it");
    let (issued, overlapping) = run_fifo(&format!("{job}serialize_overlap=1\n"));
    assert_eq!(issued, 200, "every I/O is still issued, later");
    assert_eq!(overlapping, 0);
}

#[test]
fn sync_job_issues_one_and_thinks_after_completion() {
    let mut d = driver("[a]\nrw=randread\nthinktime=2000\nruntime=1\ntime_based\n");
    let mut out = Vec::new();
    assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Ready);
    assert_eq!(out.len(), 1);
    assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Blocked);
    d.on_complete(Nanos(100_000), Op::Read, 4096, Nanos::ZERO);
    assert_eq!(d.poll(Nanos(100_000), &mut out), Poll::WaitUntil(Nanos(2_100_000)));
    assert_eq!(d.poll(Nanos(2_100_000), &mut out), Poll::Ready);
}

#[test]
fn async_job_fills_depth_in_batches() {
    let mut d = driver("[a]\nioengine=io_uring\niodepth=8\niodepth_batch_submit=3\nrw=randread\nsize=1m\n");
    let mut out = Vec::new();
    assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Ready);
    assert_eq!(out.len(), 3);
    d.poll(Nanos::ZERO, &mut out);
    d.poll(Nanos::ZERO, &mut out);
    assert_eq!(out.len(), 8);
    assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Blocked);
}

#[test]
fn size_limits_issued_bytes() {
    let mut d = driver("[a]\nioengine=libaio\niodepth=64\nrw=write\nbs=4k\nsize=40k\n");
    let mut out = Vec::new();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    assert_eq!(out.len(), 10);
    for _ in 0..10 {
        d.on_complete(Nanos(5), Op::Read, 4096, Nanos::ZERO);
    }
    assert_eq!(d.poll(Nanos(5), &mut out), Poll::Finished);
    assert_eq!(d.finished_at(), Some(Nanos(5)));
}

#[test]
fn linear_rate_spaces_issues() {
    let mut d = driver("[a]\nioengine=libaio\niodepth=64\nrw=randread\nrate_iops=1000\nruntime=1\ntime_based\n");
    let mut out = Vec::new();
    assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Ready);
    assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::WaitUntil(Nanos::from_ms(1)));
    assert_eq!(d.poll(Nanos::from_ms(1), &mut out), Poll::Ready);
    assert_eq!(out.len(), 2);
}

/// Issues of a job run for `secs` seconds, each batch completing 10 us after it went
/// out: (reads, writes).
fn paced_reads_and_writes(text: &str, secs: u64) -> (usize, usize) {
    let mut d = driver(text);
    let mut out = Vec::new();
    let mut now = Nanos::ZERO;
    let end = Nanos::from_secs(secs);
    while now < end {
        let before = out.len();
        let poll = d.poll(now, &mut out);
        for u in &out[before..] {
            d.on_complete(now, u.op, u.len_bytes, Nanos::ZERO);
        }
        match poll {
            Poll::WaitUntil(t) => now = t.max(now + Nanos::from_us(10)),
            Poll::Ready | Poll::Blocked => now += Nanos::from_us(10),
            other => panic!("{other:?}"),
        }
    }
    let count = |op| out.iter().filter(|u| u.op == op).count();
    (count(Op::Read), count(Op::Write))
}

#[test]
fn a_mixed_job_keeps_each_directions_own_rate() {
    // fio 3.33 (rate_ddir): a drawn direction ahead of its pace gives way to the other;
    // rw=randrw rate_iops=100,10 for 2 s gives 200 reads and 20 writes (nvsched gave 14
    // reads: waiting for each drawn write held the reads to the writes' pace)
    let job = "[a]\nioengine=libaio\niodepth=32\nrw=randrw\nsize=1m\nruntime=2\ntime_based\n";
    let run = |extra: &str| paced_reads_and_writes(&format!("{job}{extra}\n"), 2);
    let (reads, writes) = run("rate_iops=100,10");
    assert!((199..=201).contains(&reads) && (19..=21).contains(&writes), "{reads} {writes}");
    // a direction without a rate is always due: the paced one keeps its rate
    let (reads, writes) = run("rate_iops=,10");
    assert!(reads > 10_000 && (19..=21).contains(&writes), "{reads} {writes}");
    // a direction without a share of the mix is never taken
    assert_eq!(run("rate_iops=100,10\nrwmixread=100").1, 0);
}

#[test]
fn poisson_rate_has_the_configured_mean() {
    let mut d = driver("[a]\nioengine=libaio\niodepth=65536\nrw=randread\nrate_iops=1000\nrate_process=poisson\nruntime=100\ntime_based\n");
    let mut out = Vec::new();
    let mut now = Nanos::ZERO;
    let mut gaps = Vec::new();
    while out.len() < 20_000 {
        match d.poll(now, &mut out) {
            Poll::WaitUntil(t) => {
                gaps.push((t - now).as_secs_f64());
                now = t;
            }
            Poll::Ready => {}
            other => panic!("{other:?}"),
        }
    }
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!((mean - 0.001).abs() < 0.00005, "{mean}");
    let cv = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt() / mean;
    assert!((cv - 1.0).abs() < 0.05, "exponential gaps have cv 1: {cv}");
}

#[test]
fn an_async_engine_queues_its_fsync_behind_the_writes_in_flight() {
    // fio 3.33's libaio engine sends the sync with writes out (QD4, fsync=2, 8 x 1 MiB:
    // "IO depths: 1=12.5%, 2=37.5%, 4=87.5%"); the end of a pass waits for them all
    let mut d = driver("[a]\nioengine=libaio\niodepth=4\nrw=write\nfsync=2\nsize=1m\n");
    let mut out = Vec::new();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    let ops: Vec<Op> = out.iter().map(|u| u.op).collect();
    assert_eq!(ops, [Op::Write, Op::Write, Op::Flush, Op::Write], "queued at depth 4");
    assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::Blocked);
    // but only into a free slot of the queue, and a free scheduler tag
    let mut d = driver("[a]\nioengine=libaio\niodepth=2\nrw=write\nfsync=2\nsize=1m\n");
    out.clear();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    assert_eq!(out.len(), 2, "the queue is full: {out:?}");
    d.on_complete(Nanos(1), Op::Write, 4096, Nanos::ZERO);
    assert_eq!(d.poll_at_most(Nanos(1), &mut out, 0), Poll::Blocked, "no tag free");
    assert_eq!(d.poll_at_most(Nanos(1), &mut out, 1), Poll::Ready);
    assert_eq!((out[2].op, d.inflight()), (Op::Flush, 2));
    // a synchronous engine has nothing else out when its flush is due
    let mut d = driver("[a]\nioengine=psync\nrw=write\nfsync=2\nsize=1m\n");
    let mut ops = Vec::new();
    for t in 1..6 {
        out.clear();
        assert_eq!(d.poll(Nanos(t), &mut out), Poll::Ready);
        ops.extend(out.iter().map(|u| u.op));
        assert_eq!(d.poll(Nanos(t), &mut out), Poll::Blocked, "one at a time");
        d.on_complete(Nanos(t), out[0].op, 4096, Nanos::ZERO);
    }
    assert_eq!(ops, [Op::Write, Op::Write, Op::Flush, Op::Write, Op::Write]);
}

/// Runs `d` to its end, each unit completing 1 us after the previous one; returns
/// what it issued, whether each completion counted, and when it finished.
fn run_to_end(d: &mut JobDriver) -> (Vec<(Op, bool)>, Nanos) {
    let (mut out, mut counted, mut t) = (Vec::new(), Vec::new(), Nanos::ZERO);
    loop {
        let before = out.len();
        match d.poll(t, &mut out) {
            Poll::Finished => break,
            Poll::WaitUntil(w) => t = w,
            Poll::Ready => {
                for _ in before..out.len() {
                    t += Nanos(1_000);
                    counted.push(d.on_complete(t, Op::Read, 4096, Nanos::ZERO).counted);
                }
            }
            Poll::Blocked | Poll::Held(_) => panic!("blocked with nothing in flight at {t:?}"),
        }
    }
    assert_eq!(d.finished_at(), Some(t), "finished when the last request completed");
    (out.iter().map(|u| u.op).zip(counted).collect(), t)
}

/// A driver replaying `trace` (written to a temporary file) with `options`.
fn replaying(trace: &str, options: &str) -> JobDriver {
    let dir = std::env::temp_dir().join(format!("nvsched-driver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let path = dir.join(format!("{}.trace", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    std::fs::write(&path, trace).unwrap();
    driver(&format!("[a]\nread_iolog={}\n{options}\n", path.display()))
}

/// Polls `d` from time 0, completing each unit `service` after it was issued, with
/// at most `d`'s depth in flight; returns (issue time, unit) in order.
fn replay_timeline(d: &mut JobDriver, service: Nanos) -> Vec<(Nanos, IoUnit)> {
    let (mut now, mut issued, mut inflight) = (Nanos::ZERO, Vec::new(), Vec::<Nanos>::new());
    loop {
        let mut out = Vec::new();
        let poll = d.poll(now, &mut out);
        for u in out {
            issued.push((now, u));
            inflight.push(now + service);
        }
        inflight.sort();
        let next_completion = inflight.first().copied();
        match poll {
            Poll::Finished => return issued,
            Poll::Ready => continue,
            Poll::WaitUntil(t) if next_completion.is_none_or(|c| t < c) => now = t,
            _ => {
                now = next_completion.expect("blocked with nothing in flight");
                inflight.remove(0);
                d.on_complete(now, Op::Read, 4096, Nanos::ZERO);
            }
        }
    }
}

const TRACE: &str = "1000000 0 0 8 1\n1500000 0 8 8 0\n1500000 1 1200 16 1\n9000000 0 16 8 1\n";

#[test]
fn replay_issues_each_record_at_its_time_where_the_trace_put_it() {
    let mut d = replaying(TRACE, "ioengine=io_uring\niodepth=8");
    let got = replay_timeline(&mut d, Nanos(100_000));
    let times: Vec<u64> = got.iter().map(|(t, _)| t.0).collect();
    assert_eq!(times, [0, 500_000, 500_000, 8_000_000], "relative to the first record");
    let units: Vec<(Op, u64, u32)> = got.iter().map(|(_, u)| (u.op, u.offset_bytes, u.len_bytes)).collect();
    // device 0 holds its first MiB of the region, device 1 the next
    assert_eq!(
        units,
        [(Op::Read, 0, 4096), (Op::Write, 4096, 4096), (Op::Read, (1 << 20) + 614_400, 8192), (Op::Read, 8192, 4096)]
    );
    let st = d.replay_stats().unwrap();
    assert_eq!((st.records, st.issued, st.lag_max), (4, 4, Nanos::ZERO));
    assert_eq!(d.finished_at(), Some(Nanos(8_100_000)), "the job ends with the trace");
}

#[test]
fn replay_behind_a_full_queue_goes_late_and_says_so() {
    let mut d = replaying(TRACE, "");
    let got = replay_timeline(&mut d, Nanos(2_000_000));
    let times: Vec<u64> = got.iter().map(|(t, _)| t.0).collect();
    assert_eq!(times, [0, 2_000_000, 4_000_000, 8_000_000], "iodepth 1: each waits for the one before");
    let st = d.replay_stats().unwrap();
    assert_eq!(st.lag_max, Nanos(3_500_000));
    assert_eq!(st.late_ios, 2);
    assert_eq!(st.lag_mean(), Nanos((1_500_000 + 3_500_000) / 4));
}

#[test]
fn replay_options_scale_skip_and_drop() {
    let times = |options: &str| -> Vec<u64> {
        replay_timeline(&mut replaying(TRACE, options), Nanos(1_000)).iter().map(|(t, _)| t.0).collect()
    };
    assert_eq!(times("ioengine=io_uring\niodepth=8\nreplay_time_scale=200"), [0, 250_000, 250_000, 4_000_000]);
    assert_eq!(times("ioengine=io_uring\niodepth=8\nreplay_no_stall=1"), [0, 0, 0, 0]);
    let mut d = replaying(TRACE, "replay_skip=write");
    assert_eq!(replay_timeline(&mut d, Nanos(1_000)).len(), 3);
    assert_eq!(d.replay_stats().unwrap().skipped, 1);
    // device 1's request lies beyond a 1 MiB file split in two halves
    let mut d = replaying(TRACE, "size=1m");
    assert!(replay_timeline(&mut d, Nanos(1_000)).iter().all(|(_, u)| u.offset_bytes < 512 << 10));
    assert_eq!((d.replay_stats().unwrap().issued, d.replay_stats().unwrap().dropped), (3, 1));
    let mut d = replaying(TRACE, "size=1m\nreplay_outside=wrap");
    let wrapped = replay_timeline(&mut d, Nanos(1_000))[2].1.offset_bytes;
    assert_eq!((wrapped, d.replay_stats().unwrap().wrapped), ((512 << 10) + 614_400 % (512 << 10), 1));
    let mut d = replaying(TRACE, "size=1m\nreplay_devices=shared");
    assert_eq!(replay_timeline(&mut d, Nanos(1_000))[2].1.offset_bytes, 614_400, "one space for all devices");
    assert_eq!(d.replay_stats().unwrap().dropped, 0);
}

#[test]
fn runtime_cuts_a_replay_short_and_flushes_replay_as_flushes() {
    let trace = "fio version 3 iolog\n0 f write 0 4096\n10 f sync 0 0\n3000000 f read 0 4096\n";
    let mut d = replaying(trace, "runtime=1");
    let got = replay_timeline(&mut d, Nanos(1_000));
    let ops: Vec<Op> = got.iter().map(|(_, u)| u.op).collect();
    assert_eq!(ops, [Op::Write, Op::Flush], "the read at 3 s lies past the runtime");
    assert_eq!(d.replay_stats().unwrap().issued, 2);
}

#[test]
fn a_pause_longer_than_the_runtime_ends_with_it() {
    for pause in ["thinktime=5s", "rate=1k", "rate_iops=1"] {
        let mut d = driver(&format!("[a]\nrw=randread\nruntime=1\ntime_based\n{pause}\n"));
        let (ios, end) = run_to_end(&mut d);
        assert_eq!(ios.len(), 1, "{pause}: one read, then the pause");
        assert_eq!(end, Nanos::from_secs(1), "{pause}: the job ends at its runtime, as fio's");
    }
}

/// Where `fsync=N` flushes, as fio 3.33's write_iolog shows them (psync): before the
/// next write, so none after the job's last one, and twice where a loop or `io_size`
/// pass ends on a due flush; a time-based job's wraps flush once.
#[test]
fn fsync_flushes_where_fio_does() {
    // the region is the job's size, as the engines cut it
    let pattern = |job: &str| -> String {
        let size = if job.contains("size=48k") { 48 << 10 } else { 64 << 10 };
        let mut d = driver_over(&format!("[a]\nrw=write\nbs=4k\nfsync=8\n{job}\n"), size);
        let ops = run_to_end(&mut d).0;
        let text: String = ops.iter().map(|(op, _)| if *op == Op::Flush { 'S' } else { 'w' }).collect();
        text.replace("wwww", "4")
    };
    assert_eq!(pattern("size=64k\nloops=3"), "44S44SS44S44SS44S44");
    assert_eq!(pattern("size=48k\nloops=3"), "44S44S44SS44S4");
    assert_eq!(pattern("size=64k\nio_size=192k"), "44S44SS44S44SS44S44");
    assert_eq!(pattern("size=64k\nnumber_ios=16"), "44S44");
    assert_eq!(pattern("size=64k\nloops=2\nrw=randwrite"), "44S44SS44S44");
    assert_eq!(pattern("size=64k\nloops=2\nrw=randwrite\nnorandommap"), "44S44S44S44");
    let mut d = driver_over("[a]\nrw=write\nbs=4k\nfsync=8\nsize=64k\nruntime=1ms\ntime_based\n", 64 << 10);
    let ops = run_to_end(&mut d).0;
    let (writes, flushes) =
        ops.iter().fold((0, 0), |(w, f), (op, _)| if *op == Op::Flush { (w, f + 1) } else { (w + 1, f) });
    assert!(writes > 64, "{writes} writes: it wraps");
    assert_eq!(flushes, writes / 8, "one flush per 8 writes across the wraps");
}

/// Between two passes (loops, or `io_size` wraps) fio runs its end flush and its
/// read-back where the pass over the region ends, not after a byte count: `bs=3k`
/// over 64 KiB does 21 blocks a pass. The sequences are fio 3.33's write_iologs
/// (w: write, r: read, S: flush; "5" is 5 writes, "R" 5 reads).
#[test]
fn between_passes_the_flush_and_read_back_come_where_fio_puts_them() {
    let sequence = |job: &str| -> String {
        let mut d = driver_over(&format!("[a]\nrw=write\nsize=64k\n{job}\n"), 64 << 10);
        let mut out = Vec::new();
        let mut t = Nanos::ZERO;
        loop {
            let before = out.len();
            match d.poll(t, &mut out) {
                Poll::Finished => break,
                Poll::Ready => {
                    for u in &out[before..] {
                        t += Nanos(1_000);
                        d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
                        d.on_complete(t, u.op, u.len_bytes, Nanos::ZERO);
                    }
                }
                other => panic!("{job}: {other:?}"),
            }
        }
        let ops: String = out
            .iter()
            .map(|u: &IoUnit| match u.op {
                Op::Write => 'w',
                Op::Read => 'r',
                _ => 'S',
            })
            .collect();
        ops.replace("wwwww", "5").replace("rrrrr", "R")
    };
    assert_eq!(sequence("bs=3k\nloops=2\nend_fsync=1"), "5555wS5555wS");
    assert_eq!(sequence("bs=3k\nloops=2\nverify=crc32c"), "5555wRRRRr5555wRRRRr");
    assert_eq!(sequence("bs=4k\nio_size=128k\nend_fsync=1"), "555wS555wS");
    // fsync=8's second flush at the pass end opens the next pass, after the read-back
    assert_eq!(sequence("bs=4k\nloops=2\nfsync=8\nverify=crc32c"), "5wwwS5wwwSRRRrS5wwwS5wwwRRRr");
    assert_eq!(sequence("bs=4k\nloops=2\nverify=crc32c\nverify_backlog=8"), "5wwwRrrr5wwwRrrr5wwwRrrr5wwwRrrr");
}

#[test]
fn thinktime_keeps_fsync_counting() {
    let mut d = driver("[a]\nrw=write\nfsync=2\nthinktime=10\nsize=64k\n");
    let ops: Vec<Op> = run_to_end(&mut d).0.into_iter().map(|(op, _)| op).collect();
    // as fio 3.33: 7 flushes, none after the last write (the job ends there)
    assert_eq!(ops.len(), 23, "16 writes, a flush after every second one but the last: {ops:?}");
    assert!(ops.chunks(3).all(|c| c == [Op::Write, Op::Write, Op::Flush] || c == [Op::Write, Op::Write]), "{ops:?}");
}

#[test]
fn end_fsync_flushes_after_each_pass_uncounted() {
    let w = (Op::Write, true);
    let end_flush = (Op::Flush, false);
    let (ops, _) = run_to_end(&mut driver("[a]\nrw=write\nsize=16k\nend_fsync=1\n"));
    assert_eq!(ops, [w, w, w, w, end_flush]);
    // each loop ends with one (fio runs do_io, and its end_fsync, once per loop)
    let (ops, _) = run_to_end(&mut driver_over("[a]\nrw=randwrite\nsize=8k\nloops=2\nfsync_on_close=1\n", 8 << 10));
    assert_eq!(ops, [w, w, end_flush, w, w, end_flush]);
    // over a larger file a sync engine's pass ends only at the job's limit, and the
    // next loop issues nothing but flushes again (fio 3.33, psync: `size=8k` over a
    // 1 GiB file); an asynchronous engine's pass ends after `size` bytes
    let (ops, _) = run_to_end(&mut driver("[a]\nrw=randwrite\nsize=8k\nloops=2\nfsync_on_close=1\n"));
    assert_eq!(ops, [w, w, w, w, end_flush, end_flush]);
    let (ops, _) = run_to_end(&mut driver("[a]\nioengine=libaio\nrw=randwrite\nsize=8k\nloops=2\nfsync_on_close=1\n"));
    assert_eq!(ops, [w, w, end_flush, w, w, end_flush]);
    // after an fsync=N flush none is owed (fio's last_was_sync); an fsync=N flush due
    // on the job's last write is not issued, so the end flush comes instead (fio 3.33:
    // no sync counted)
    let (ops, _) = run_to_end(&mut driver("[a]\nrw=write\nsize=12k\nfsync=2\nend_fsync=1\n"));
    assert_eq!(ops, [w, w, (Op::Flush, true), w, end_flush]);
    let (ops, _) = run_to_end(&mut driver("[a]\nrw=write\nsize=8k\nfsync=2\nend_fsync=1\n"));
    assert_eq!(ops, [w, w, end_flush]);
    // jobs that do not write do not flush
    let (ops, _) = run_to_end(&mut driver("[a]\nrw=read\nsize=8k\nend_fsync=1\n"));
    assert_eq!(ops, [(Op::Read, true), (Op::Read, true)]);
    // an asynchronous job drains first, and a time-based one flushes after its runtime
    let mut d = driver("[a]\nioengine=io_uring\niodepth=4\nrw=randrw\nend_fsync=1\nruntime=2ms\ntime_based\n");
    let mut out = Vec::new();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    assert_eq!(out.len(), 4);
    assert_eq!(d.poll(Nanos::from_ms(2), &mut out), Poll::Blocked, "drains first");
    for i in 1..4 {
        assert!(d.on_complete(Nanos::from_ms(2) + Nanos(i), Op::Read, 4096, Nanos::ZERO).counted);
    }
    assert_eq!(d.poll(Nanos::from_ms(3), &mut out), Poll::Blocked);
    assert!(d.on_complete(Nanos::from_ms(3), Op::Read, 4096, Nanos::ZERO).counted);
    assert_eq!(d.finished_at(), None, "the flush is still owed");
    assert_eq!(d.poll(Nanos::from_ms(3), &mut out), Poll::Ready);
    assert_eq!(out.last().map(|u| u.op), Some(Op::Flush));
    assert!(!d.on_complete(Nanos::from_ms(4), Op::Read, 4096, Nanos::ZERO).counted, "not counted");
    assert_eq!(d.poll(Nanos::from_ms(4), &mut out), Poll::Finished);
    assert_eq!(d.finished_at(), Some(Nanos::from_ms(4)), "the job's runtime includes it");
}

#[test]
fn terminate_stops_issuing_and_still_owes_the_end_flush() {
    let mut d = driver("[a]\nioengine=io_uring\niodepth=2\nrw=write\nend_fsync=1\ntime_based\nruntime=1\n");
    let mut out = Vec::new();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    d.terminate(Nanos(10));
    assert_eq!(d.poll(Nanos(10), &mut out), Poll::Blocked, "in-flight writes complete first");
    d.on_complete(Nanos(20), Op::Read, 4096, Nanos::ZERO);
    d.on_complete(Nanos(30), Op::Read, 4096, Nanos::ZERO);
    assert_eq!(d.poll(Nanos(30), &mut out), Poll::Ready);
    assert_eq!(out.iter().map(|u| u.op).collect::<Vec<_>>(), [Op::Write, Op::Write, Op::Flush]);
    assert!(!d.on_complete(Nanos(40), Op::Read, 4096, Nanos::ZERO).counted);
    assert_eq!(d.poll(Nanos(40), &mut out), Poll::Finished);
    // terminated before its startdelay: done at once, nothing issued, nothing owed
    let mut d = driver("[a]\nrw=write\nend_fsync=1\nstartdelay=1\nsize=1m\n");
    d.terminate(Nanos(5));
    assert_eq!(d.poll(Nanos(5), &mut out), Poll::Finished);
    assert_eq!(d.finished_at(), Some(Nanos(5)));
}

#[test]
fn startdelay_postpones_the_first_issue() {
    let mut d = driver("[a]\nrw=randread\nstartdelay=5ms\nruntime=1ms\ntime_based\n");
    let mut out = Vec::new();
    assert_eq!(d.poll(Nanos::ZERO, &mut out), Poll::WaitUntil(Nanos::from_ms(5)));
    assert_eq!(d.end(), Some(Nanos::from_ms(6)));
    assert_eq!(d.poll(Nanos::from_ms(5), &mut out), Poll::Ready);
}

#[test]
fn runtime_stops_issuing() {
    let mut d = driver("[a]\nrw=randread\nruntime=1ms\ntime_based\nramp_time=1ms\n");
    assert_eq!(d.ramp_end(), Nanos::from_ms(1));
    assert_eq!(d.end(), Some(Nanos::from_ms(2)));
    let mut out = Vec::new();
    assert_eq!(d.poll(Nanos::from_ms(2), &mut out), Poll::Finished);
}

#[test]
fn max_latency_fails_the_job_and_stops_it() {
    let mut d =
        driver("[a]\nioengine=io_uring\niodepth=4\nrw=randread\nmax_latency=100\ntime_based\nruntime=1\nend_fsync=1\n");
    let mut out = Vec::new();
    while d.poll(Nanos::ZERO, &mut out) == Poll::Ready {}
    assert_eq!(out.len(), 4);
    let fast = d.on_complete(Nanos::from_us(50), Op::Read, 4096, Nanos::from_us(50));
    assert!(fast.counted && fast.failed.is_none());
    let slow = d.on_complete(Nanos::from_us(150), Op::Read, 4096, Nanos::from_us(150));
    assert_eq!(
        (slow.counted, slow.failed),
        (true, Some(Failure::Latency(Nanos::from_us(100)))),
        "the slow one counts, as in fio"
    );
    out.clear();
    assert_eq!(d.poll(Nanos::from_us(150), &mut out), Poll::Blocked, "nothing more is issued, no flush either");
    assert!(out.is_empty());
    assert!(
        !d.on_complete(Nanos::from_us(160), Op::Read, 4096, Nanos::ZERO).counted,
        "what completes after counts no more"
    );
    d.on_complete(Nanos::from_us(170), Op::Read, 4096, Nanos::ZERO);
    assert_eq!(d.poll(Nanos::from_us(170), &mut out), Poll::Finished);
    assert_eq!(d.finished_at(), Some(Nanos::from_us(150)), "its runtime ends with the failure");
}

/// Runs `d` against a device where a request takes 100 us per request in flight when
/// it was issued; returns the completions' outcomes and the most in flight beyond the
/// depth the driver had then.
fn run_against_queueing_device(d: &mut JobDriver) -> (Vec<Completed>, u32) {
    let mut due: std::collections::BinaryHeap<std::cmp::Reverse<(Nanos, Nanos)>> = Default::default();
    let (mut now, mut out, mut outcomes, mut excess) = (Nanos::ZERO, Vec::new(), Vec::new(), 0);
    loop {
        out.clear();
        match d.poll(now, &mut out) {
            Poll::Finished => return (outcomes, excess),
            Poll::Ready => {
                for _ in &out {
                    due.push(std::cmp::Reverse((now + Nanos::from_us(100 * u64::from(d.inflight())), now)));
                }
                excess = excess.max(d.inflight().saturating_sub(d.depth()));
                continue;
            }
            Poll::WaitUntil(_) | Poll::Blocked | Poll::Held(_) => {}
        }
        let std::cmp::Reverse((at, issued)) = due.pop().expect("blocked with nothing in flight");
        now = at;
        outcomes.push(d.on_complete(now, Op::Read, 4096, now - issued));
    }
}

#[test]
fn latency_target_finds_the_deepest_queue_that_meets_it_then_stops() {
    // 100 us per request in flight: depths up to 10 meet 1 ms
    let mut d = driver("[a]\nioengine=io_uring\niodepth=64\nrw=randread\nlatency_target=1ms\nlatency_window=20ms\ntime_based\nruntime=10\n");
    let (outcomes, excess) = run_against_queueing_device(&mut d);
    assert_eq!(excess, 0, "never more in flight than the depth it issued at");
    assert_eq!(d.latency_depth(), Some(10));
    assert_eq!(outcomes.iter().filter(|c| c.restart_stats).count(), 1, "statistics restart once, for the final window");
    assert!(outcomes.iter().all(|c| c.failed.is_none()));
    let end = d.finished_at().unwrap();
    assert!(end < Nanos::from_secs(1), "it stops once the final window held, long before runtime: {end}");
    assert!(d.ramp_end() > Nanos::ZERO && end - d.ramp_end() >= Nanos::from_ms(20), "the final window is measured");
}

#[test]
fn latency_target_at_depth_one_fails_only_a_hundred_percent_target() {
    // every request takes 100 us at depth 1: a 50 us target cannot be met
    let mut d = driver("[a]\nioengine=io_uring\niodepth=8\nrw=randread\nlatency_target=50\ntime_based\nruntime=1\n");
    let (outcomes, _) = run_against_queueing_device(&mut d);
    assert_eq!(
        outcomes.iter().filter_map(|c| c.failed.clone()).collect::<Vec<_>>(),
        [Failure::Latency(Nanos::from_us(50))]
    );
    assert_eq!(d.finished_at(), Some(Nanos::from_us(100)));
    let mut d = driver("[a]\nioengine=io_uring\niodepth=8\nrw=randread\nlatency_target=50\nlatency_percentile=99\nlatency_window=1ms\ntime_based\nruntime=20ms\n");
    let (outcomes, _) = run_against_queueing_device(&mut d);
    assert!(outcomes.iter().all(|c| c.failed.is_none() && !c.restart_stats));
    assert_eq!((d.latency_depth(), d.finished_at()), (Some(1), Some(Nanos::from_ms(20))), "it runs on at depth 1");
}

#[test]
fn cmdprio_bssplit_gives_each_block_size_its_shares_of_priorities() {
    let mut d = driver(
        // norandommap: the random map would cut I/Os short once the region fills up
        "[a]\nioengine=io_uring\niodepth=1\nrw=randread\nnorandommap\nbssplit=64k/40:1m/60\nprioclass=2\nprio=7\n\
         cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\ntime_based\nruntime=1\n",
    );
    let (mut out, mut counts) = (Vec::new(), std::collections::HashMap::new());
    for i in 0..20_000u64 {
        out.clear();
        assert_eq!(d.poll(Nanos(i), &mut out), Poll::Ready);
        *counts.entry((out[0].len_bytes, out[0].prio)).or_insert(0u32) += 1;
        d.on_complete(Nanos(i), Op::Read, 4096, Nanos::ZERO);
    }
    let n = |bs: u32, p: IoPrio| f64::from(counts.get(&(bs, p)).copied().unwrap_or(0)) / 20_000.0;
    assert!((n(65_536, IoPrio::rt(1)) - 0.40 * 0.25).abs() < 0.01, "{counts:?}");
    assert!((n(65_536, IoPrio::new(nvsched_core::PrioClass::Idle, 2)) - 0.40 * 0.75).abs() < 0.01, "{counts:?}");
    assert!((n(1 << 20, IoPrio::be(7)) - 0.60).abs() < 0.01, "1 MiB reads keep the job's own: {counts:?}");
    assert_eq!(counts.len(), 3, "{counts:?}");
    // the simple form takes cmdprio_class/cmdprio; and it excludes cmdprio_percentage
    let spec = |extra: &str| {
        let text = format!("[a]\nioengine=io_uring\nrw=randread\nbssplit=4k/50:8k/50\n{extra}");
        parse_job_str(&text, Path::new("t.fio"), &env(), ParseOptions::default()).map(|mut f| f.jobs.remove(0))
    };
    let s = spec("cmdprio_bssplit=8k/100\ncmdprio_class=2\ncmdprio=1\n").unwrap();
    assert_eq!(s.cmdprio_split(Op::Read), [(8192, 100, IoPrio::be(1))]);
    assert_eq!(s.ioprios(), [IoPrio::default(), IoPrio::be(1)]);
    let e = spec("cmdprio_bssplit=8k/100\ncmdprio_percentage=10\n").unwrap_err().to_string();
    assert!(e.contains("exclude each other"), "{e}");
    let e = spec("cmdprio_bssplit=8k/60/1/0:8k/60/2/0\n").unwrap_err().to_string();
    assert!(e.contains("add up to 120%"), "{e}");
}
