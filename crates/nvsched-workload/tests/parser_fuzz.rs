//! Randomised parser harness (the stable-toolchain twin of `fuzz/`): job files built from
//! real option names with random, often invalid, values must parse or fail with an error
//! naming the file, never panic; whatever parses must also build its generators.

use nvsched_core::{Nanos, Op};
use nvsched_workload::jobfile::Environment;
use nvsched_workload::{parse_job_str, IoGenerator, JobDriver, ParseOptions, Poll, Region, OPTIONS};
use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;

struct NoEnv;
impl Environment for NoEnv {
    fn var(&self, _: &str) -> Option<String> {
        Some("4k".into())
    }
    fn keyword(&self, name: &str) -> Option<u64> {
        (name == "pagesize").then_some(4096)
    }
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,6}",
        "[0-9]{1,4}[kmgKMG]?(i?[bB])?",
        "-?[0-9]{1,3}(\\.[0-9]{1,2})?(us|ms|s|m|h)?",
        "[0-9]{1,3}%",
        "\\([0-9*+/^ -]{1,10}\\)",
        "(zipf|pareto|normal|random|zoned):[0-9.]{0,4}(:[0-9.]{0,3})?",
        "(read|write|randread|randwrite|randrw|rw|trim|sideways)",
        "([0-9]{1,3}k/[0-9]{0,3}:?){1,4}",
        "[0-9]{0,3}k?-[0-9]{0,3}k?,?[0-9]{0,3}",
        "(psync|io_uring|libaio|sync|spdk|null)",
        "\\$\\{[A-Z]{1,4}\\}|\\$[a-z]{1,8}",
        ".{0,12}",
    ]
}

fn line() -> impl Strategy<Value = String> {
    let names: Vec<&'static str> =
        OPTIONS.iter().flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied())).collect();
    prop_oneof![
        8 => (prop::sample::select(names.clone()), value()).prop_map(|(k, v)| format!("{k}={v}")),
        2 => prop::sample::select(names).prop_map(str::to_string),
        1 => "\\[[a-z ]{0,8}\\]?".prop_map(|s| s),
        1 => "[;#].{0,10}",
        1 => ".{0,20}",
    ]
}

fn job_file() -> impl Strategy<Value = String> {
    (prop::collection::vec(line(), 0..12), prop::collection::vec(line(), 0..12))
        .prop_map(|(g, j)| format!("[global]\n{}\n[job]\n{}\n", g.join("\n"), j.join("\n")))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(text in job_file(), ignore in any::<bool>()) {
        match parse_job_str(&text, Path::new("fuzz.fio"), &NoEnv, ParseOptions { ignore_unsupported: ignore }) {
            Err(e) => prop_assert!(e.to_string().starts_with("fuzz.fio"), "{}", e),
            Ok(file) => {
                for spec in file.jobs {
                    let spec = Arc::new(spec);
                    let region = Region::new(0, 1 << 30);
                    if let Ok(mut g) = IoGenerator::new(&spec, region, 1) {
                        for _ in 0..64 {
                            let u = g.next_unit();
                            prop_assert!(u.offset_bytes + u64::from(u.len_bytes) <= 1 << 30);
                        }
                    }
                    if let Ok(mut d) = JobDriver::new(spec, 0, &[region], 1) {
                        d.start(Nanos::ZERO);
                        let mut out = Vec::new();
                        for _ in 0..16 {
                            if d.poll(Nanos(1000), &mut out) != Poll::Ready { break; }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = parse_job_str(&text, Path::new("fuzz.fio"), &NoEnv, ParseOptions::default());
    }
}

/// Trace lines: most in one format's shape with random values (some out of range), some
/// anything at all.
fn trace_lines() -> impl Strategy<Value = Vec<String>> {
    let number = "-?[0-9]{1,21}(\\.[0-9]{0,9})?";
    let shapes: Vec<BoxedStrategy<String>> = vec![
        "[0-9]{1,12} [0-9]{1,2} [0-9]{1,12} [0-9]{1,6} [0-3]".boxed(),
        "[0-9]{1,4}\\.[0-9]{1,6} [0-9] [0-9]{1,10} [0-9]{1,4} [01]".boxed(),
        "[0-9]{1,2},[0-9]{1,12},[0-9]{1,8},[rRwW],[0-9]{1,5}\\.[0-9]{1,6}".boxed(),
        "1281663[0-9]{11},(prxy|hm),[0-9],(Read|Write),[0-9]{1,12},[0-9]{1,8},[0-9]{1,5}".boxed(),
        "[0-9]{0,7} f (read|write|trim|sync|add|open) [0-9]{1,12} [0-9]{1,8}".boxed(),
        "8,[0-9]{1,2} +[0-9] +[0-9]+ +[0-9]{1,3}\\.[0-9]{9} +[0-9]+ +[QDCIM] +F?[RWDN]S? +[0-9]{1,12} \\+ [0-9]{1,5} \\[x\\]".boxed(),
        " +[a-z]{1,5}-[0-9]{1,5} +\\[00[01]\\] [.N]{5} [0-9]{1,5}\\.[0-9]{6}: block_(bio_queue|rq_issue): 254,0 F?[RWDNF]S? ([0-9]{1,5} \\(\\) )?[0-9]{1,12} \\+ [0-9]{1,5}( rt,0,0)? \\[fio\\]".boxed(),
        proptest::collection::vec(number, 1..7).prop_map(|f| f.join(" ")).boxed(),
        proptest::collection::vec(prop_oneof![number.boxed(), "[rRwWx]|Read|Write|host".boxed()], 1..9)
            .prop_map(|f| f.join(","))
            .boxed(),
        ".{0,30}".boxed(),
        "[0-9]{1,4},[RWX],[0-9]{1,21},[0-9]{1,10},[0-9]{1,20}".boxed(),
        "[0-9]{1,11},[0-9]{1,21},[0-9]{1,6},[0-2],[0-9]{1,5}".boxed(),
        "[0-9]{1,21} [0-9]{1,5} [a-z]{1,5} [0-9]{1,21} [0-9]{1,6} [RWX] [0-9] [0-9]( [0-9a-f]{32})?".boxed(),
    ];
    (0..shapes.len(), any::<bool>()).prop_flat_map(move |(k, header)| {
        let body = proptest::collection::vec(prop_oneof![9 => shapes[k].clone(), 1 => ".{0,30}"], 1..12);
        // fio's iolog shape needs its header line
        body.prop_map(move |mut lines| {
            if k == 4 && header {
                lines.insert(0, "fio version 3 iolog".into());
            }
            lines
        })
    })
}

/// Replays a trace that read to its end (or until 100 polls) in a driver.
fn replays(path: &Path, format: &str) {
    let text = format!("[a]\nread_iolog={}\ntrace_format={format}\nsize=64m\n", path.display());
    let spec = parse_job_str(&text, Path::new("t.fio"), &NoEnv, ParseOptions::default()).unwrap().jobs.remove(0);
    let Ok(mut d) = JobDriver::new(Arc::new(spec), 0, &[Region::new(0, 64 << 20)], 1) else {
        return;
    };
    d.start(Nanos::ZERO);
    let (mut now, mut out) = (Nanos::ZERO, Vec::new());
    for _ in 0..100 {
        out.clear();
        match d.poll(now, &mut out) {
            Poll::Finished => break,
            Poll::WaitUntil(t) => now = t,
            _ => {
                for _ in 0..out.len().max(1) {
                    d.on_complete(now, Op::Read, 4096, Nanos::ZERO);
                }
            }
        }
    }
}

/// blktrace events with random fields: real actions and categories or any, a payload that
/// may claim more bytes than follow, in either byte order, possibly cut short.
fn blktrace_bytes() -> impl Strategy<Value = Vec<u8>> {
    let action = prop_oneof![(0u32..18, 0u32..0x10000).prop_map(|(a, c)| a | (c << 16)), any::<u32>(),];
    let event = (
        0u64..1 << 40,
        prop_oneof![0u64..1 << 24, any::<u64>()],
        prop_oneof![0u32..1 << 20, any::<u32>()],
        action,
        0u16..6,
        any::<bool>(),
    );
    (proptest::collection::vec(event, 1..10), any::<bool>(), 0usize..600).prop_map(|(events, big, cut)| {
        let mut v = Vec::new();
        for (time, sector, bytes, action, pdu_len, honest) in events {
            // each field little-endian, reversed for the other byte order
            let fields: [Vec<u8>; 11] = [
                0x6561_7407u32.to_le_bytes().to_vec(),
                vec![0; 4],
                time.to_le_bytes().to_vec(),
                sector.to_le_bytes().to_vec(),
                bytes.to_le_bytes().to_vec(),
                action.to_le_bytes().to_vec(),
                vec![0; 4],
                0x0800_0010u32.to_le_bytes().to_vec(),
                vec![0; 4],
                vec![0; 2],
                pdu_len.to_le_bytes().to_vec(),
            ];
            for f in fields {
                if big {
                    v.extend(f.iter().rev())
                } else {
                    v.extend(f)
                }
            }
            v.extend(std::iter::repeat_n(b'x', if honest { pdu_len as usize } else { 0 }));
        }
        v.truncate(v.len().saturating_sub(cut % 50).max(4));
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Any trace text, in any format, reads or fails with an error naming the file, never
    /// panics; whatever reads also replays to its end in a driver.
    #[test]
    fn traces_read_or_fail_cleanly_and_replay(lines in trace_lines(), format in 0usize..12) {
        use nvsched_workload::trace::{load_trace, TraceFormat};
        let dir = std::env::temp_dir().join(format!("nvsched-trace-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.trace");
        std::fs::write(&path, lines.join("\n")).unwrap();
        let names = [
            "auto", "fio", "disksim", "disksim-ms", "spc", "msr", "blkparse", "ftrace", "blktrace", "alibaba", "tencent", "fiu",
        ];
        let chosen = TraceFormat::parse(names[format]).unwrap();
        match load_trace(&path, chosen) {
            Err(e) => prop_assert!(e.to_string().contains("t.trace"), "{e}"),
            Ok(_) => replays(&path, names[format]),
        }
    }

    /// Any blktrace events, damaged or cut off, read or fail with an error naming the
    /// file, never panic; whatever reads also replays.
    #[test]
    fn blktraces_read_or_fail_cleanly_and_replay(bytes in blktrace_bytes()) {
        use nvsched_workload::trace::load_trace;
        let dir = std::env::temp_dir().join(format!("nvsched-blktrace-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.blktrace");
        std::fs::write(&path, &bytes).unwrap();
        match load_trace(&path, None) {
            Err(e) => prop_assert!(e.to_string().contains("t.blktrace"), "{e}"),
            Ok(_) => replays(&path, "blktrace"),
        }
    }
}
