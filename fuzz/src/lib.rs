//! What the fuzz targets share.

use nvsched_workload::jobfile::Environment;

/// Job-file variables and keywords without the host: every `${VAR}` is `4k`, and the
/// page size 4 KiB, so an input parses the same everywhere.
pub struct FixedEnv;

impl Environment for FixedEnv {
    fn var(&self, _: &str) -> Option<String> {
        Some("4k".into())
    }
    fn keyword(&self, name: &str) -> Option<u64> {
        (name == "pagesize").then_some(4096)
    }
}
