//! Randomised runs of the job driver against a device that completes requests in any
//! order, and may fail some with ENOSPC: whatever the options, the job ends, never has
//! more than its depth out, never has overlapping I/Os out under `serialize_overlap`,
//! issues no data I/O after a failure (a `fill_device` job's ENOSPC ends it, any other
//! job's fails it), and each block `verify` reads back is one a write left whole. Jobs
//! run on io_uring or psync (where a pass can end at a full random map), with or without
//! `randrepeat`.

use nvsched_core::{Nanos, Op};
use nvsched_workload::jobfile::Environment;
use nvsched_workload::{parse_job_str, IoUnit, JobDriver, ParseOptions, Poll, Region};
use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;

struct NoEnv;
impl Environment for NoEnv {
    fn var(&self, _: &str) -> Option<String> {
        None
    }
    fn keyword(&self, _: &str) -> Option<u64> {
        None
    }
}

fn job() -> impl Strategy<Value = String> {
    let rw = prop::sample::select(vec!["write", "randwrite", "randrw", "rw", "randread", "trimwrite", "randtrim"]);
    let bs = prop::sample::select(vec!["bs=4k", "bsrange=4k-16k", "bs=8k"]);
    let options = prop::sample::subsequence(
        vec![
            "norandommap",
            "verify=crc32c",
            "verify_backlog=4",
            "verify_backlog=16",
            "verify_backlog_batch=3",
            "serialize_overlap=1",
            "loops=3",
            "time_based\nruntime=300us",
            "do_verify=0",
            "end_fsync=1",
            "fill_device=1",
            "ioengine=psync",
            "randrepeat=0",
        ],
        0..6,
    );
    (rw, bs, 1u32..17, prop::sample::select(vec!["16k", "64k", "256k"]), options).prop_map(
        |(rw, bs, depth, size, options)| {
            format!("[p]\nioengine=io_uring\nrw={rw}\n{bs}\niodepth={depth}\nsize={size}\n{}\n", options.join("\n"))
        },
    )
}

/// Whether two byte ranges of one file overlap.
fn overlap(a: &IoUnit, b: &IoUnit) -> bool {
    a.file == b.file
        && a.offset_bytes < b.offset_bytes + u64::from(b.len_bytes)
        && b.offset_bytes < a.offset_bytes + u64::from(a.len_bytes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10000, ..ProptestConfig::default() })]

    #[test]
    fn any_completion_order_keeps_the_drivers_promises(
        text in job(),
        order in prop::collection::vec(any::<u8>(), 64),
        enospc_every in prop::sample::select(vec![0usize, 5, 23]),
    ) {
        let spec = parse_job_str(&text, Path::new("p.fio"), &NoEnv, ParseOptions::default()).unwrap().jobs.remove(0);
        let spec = Arc::new(spec);
        let region_len = spec.size.map_or(1 << 20, |s| s.resolve(1 << 30));
        let mut d = JobDriver::new(spec.clone(), 0, &[Region::new(0, region_len)], 7).unwrap();
        d.start(Nanos::ZERO);
        let (mut in_flight, mut out): (Vec<IoUnit>, Vec<IoUnit>) = (Vec::new(), Vec::new());
        // every write issued, in order: whether it has landed, and whether a write that
        // overlaps it only in part was out with it (it may be torn: never read back)
        let mut writes: Vec<(IoUnit, bool, bool)> = Vec::new();
        let mut t = 0u64;
        let (mut completions, mut failed) = (0usize, false);
        for step in 0..200_000usize {
            t += 1_000;
            let mut poll = d.poll(Nanos(t), &mut out);
            while poll == Poll::Ready {
                poll = d.poll(Nanos(t), &mut out);
            }
            let verifying = d.verifying();
            for u in out.drain(..) {
                prop_assert!(!(failed && u.op.is_data()), "{text}: {u:?} issued after ENOSPC");
                if spec.serialize_overlap && u.op.is_data() {
                    prop_assert!(!in_flight.iter().any(|v| v.op.is_data() && overlap(&u, v)), "{text}: {u:?} overlaps one out");
                }
                if verifying && u.op == Op::Read {
                    // the last write touching the block wrote exactly it, and has landed
                    let last = writes.iter().rev().find(|(w, _, _)| overlap(w, &u));
                    prop_assert!(
                        last.is_some_and(|(w, landed, torn)| *landed && !torn && (w.offset_bytes, w.len_bytes) == (u.offset_bytes, u.len_bytes)),
                        "{text}: read-back {u:?} is not a whole written block ({last:?})"
                    );
                }
                if u.op == Op::Discard {
                    writes.push((u, true, true)); // what a trim touches is never read back
                }
                if u.op == Op::Write {
                    let torn = in_flight.iter().any(|v| {
                        (v.op == Op::Discard || (v.op == Op::Write && (v.offset_bytes, v.len_bytes) != (u.offset_bytes, u.len_bytes)))
                            && overlap(&u, v)
                    });
                    writes.push((u, false, torn));
                }
                in_flight.push(u);
            }
            prop_assert!(in_flight.len() as u32 <= spec.queue_depth(), "{text}: {} out", in_flight.len());
            if poll == Poll::Finished {
                prop_assert!(in_flight.is_empty());
                return Ok(());
            }
            // the device completes some of what is out, in an order of the test's choosing
            let k = order[step % order.len()] as usize;
            let n = 1 + k % in_flight.len().max(1);
            for j in 0..n.min(in_flight.len()) {
                let i = (k + j * 7) % in_flight.len();
                let u = in_flight.swap_remove(i);
                if u.op == Op::Write {
                    if let Some(w) = writes.iter_mut().rev().find(|(w, landed, _)| !landed && *w == u) {
                        w.1 = true;
                    }
                }
                d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
                completions += 1;
                if enospc_every > 0 && completions.is_multiple_of(enospc_every) {
                    let done = d.on_error(Nanos(t), u.op, 28);
                    prop_assert_eq!(done.failed.is_some(), !spec.fill_device && !failed, "{}", text);
                    failed = true;
                } else {
                    d.on_complete(Nanos(t), u.op, u.len_bytes, Nanos::ZERO);
                }
            }
        }
        prop_assert!(false, "{text}: not finished after 200000 steps");
    }
}
