//! Fuzzes the block-trace readers: any input, in any format, must read or return an
//! error naming the file, never panic; whatever reads must lay out on a small region.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvsched_workload::trace::{parse_trace, place, DeviceMapping, Outside, TraceFormat};
use std::path::Path;

const FORMATS: [&str; 8] = ["auto", "fio", "disksim", "disksim-ms", "spc", "msr", "blkparse", "ftrace"];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let format = TraceFormat::parse(FORMATS[usize::from(selector) % FORMATS.len()]).unwrap();
    let text = String::from_utf8_lossy(rest);
    match parse_trace(&text, Path::new("fuzz.trace"), format) {
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
