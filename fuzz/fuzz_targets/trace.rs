//! Fuzzes the block-trace readers: any input, in any format, must read or return an
//! error naming the file, never panic; whatever reads must lay out on a small region.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvsched_workload::trace::{parse_blktrace, parse_trace, place, DeviceMapping, Outside, Trace, TraceFormat};
use std::path::Path;

/// The text formats; one selector value more stands for blktrace's binary events.
const FORMATS: [&str; 11] =
    ["auto", "fio", "disksim", "disksim-ms", "spc", "msr", "alibaba", "tencent", "fiu", "blkparse", "ftrace"];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let path = Path::new("fuzz.trace");
    let choice = usize::from(selector & 0x7f) % (FORMATS.len() + 1);
    let parsed: Result<Trace, _> = match FORMATS.get(choice) {
        Some(name) => parse_trace(&String::from_utf8_lossy(rest), path, TraceFormat::parse(name).unwrap()),
        None => parse_blktrace(rest, path),
    };
    match parsed {
        Err(e) => assert!(e.to_string().starts_with("fuzz.trace")),
        Ok(trace) => {
            let mapping = if selector & 0x80 == 0 { DeviceMapping::Split } else { DeviceMapping::Shared };
            let spans = trace.device_spans(mapping, 1 << 24);
            for r in &trace.records {
                let _ = place(r, spans[r.device as usize], Outside::Wrap);
            }
        }
    }
});
