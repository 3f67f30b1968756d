use nvsched_core::{IoPrio, Nanos, Op};

/// Identifies a request for its whole life. Engines choose the values; policies only
/// compare them and hand them back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// One block request as a policy sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    pub id: RequestId,
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u32,
    /// Synchronous in the kernel's sense (a task waits on it): reads, O_SYNC/O_DSYNC and
    /// direct writes.
    pub sync: bool,
    /// Force unit access: the write completes only once it is on stable media.
    pub fua: bool,
    /// ioprio as set by the job (`prioclass`/`prio`); class `None` when unset.
    pub prio: IoPrio,
    /// CPU nice value of the submitting task (-20..=19).
    pub nice: i8,
    /// The submitting job (process); per-process policies keep a queue per job.
    pub job: u32,
    /// Tenant (cgroup) and its weight; jobs without a cgroup are tenant 0, weight 100.
    pub tenant: u32,
    pub tenant_weight: u32,
    /// When the request entered the block layer.
    pub submit_time: Nanos,
}

/// The largest request a scheduler merge may build: Linux's default `max_sectors_kb` for
/// NVMe (512 KiB), shared by every merging policy.
pub const MAX_MERGE_BYTES: u32 = 512 * 1024;

/// Which end of a queued request a merged one joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeSide {
    /// It followed the queued request (the queued one grows at its end).
    Back,
    /// It preceded the queued request (the queued one now starts at its offset).
    Front,
}

impl Request {
    /// A 4 KiB best-effort read at `offset_bytes`: a convenient start for tests.
    pub fn read(id: u64, offset_bytes: u64) -> Request {
        Request {
            id: RequestId(id),
            op: Op::Read,
            offset_bytes,
            len_bytes: 4096,
            sync: true,
            fua: false,
            prio: IoPrio::default(),
            nice: 0,
            job: 0,
            tenant: 0,
            tenant_weight: 100,
            submit_time: Nanos::ZERO,
        }
    }

    /// A 4 KiB write at `offset_bytes`.
    pub fn write(id: u64, offset_bytes: u64) -> Request {
        Request { op: Op::Write, sync: false, ..Request::read(id, offset_bytes) }
    }

    pub fn with_prio(mut self, prio: IoPrio) -> Request {
        self.prio = prio;
        self
    }
    pub fn with_job(mut self, job: u32) -> Request {
        self.job = job;
        self
    }
    pub fn with_len(mut self, len_bytes: u32) -> Request {
        self.len_bytes = len_bytes;
        self
    }
    pub fn with_tenant(mut self, tenant: u32, weight: u32) -> Request {
        self.tenant = tenant;
        self.tenant_weight = weight;
        self
    }
    pub fn at(mut self, submit_time: Nanos) -> Request {
        self.submit_time = submit_time;
        self
    }

    #[inline]
    pub fn end_offset(&self) -> u64 {
        self.offset_bytes + u64::from(self.len_bytes)
    }

    /// The priority the kernel would apply (unset class → best-effort from nice).
    #[inline]
    pub fn effective_prio(&self) -> IoPrio {
        self.prio.effective(self.nice)
    }

    #[inline]
    pub fn is_read(&self) -> bool {
        self.op == Op::Read
    }

    #[inline]
    pub fn is_write(&self) -> bool {
        self.op == Op::Write
    }

    /// Whether `next` may be appended to `self` (a back merge) under the rules every
    /// merging policy shares: same direction and flags, same priority, job's tenant,
    /// contiguous, and the result no larger than `max_bytes`.
    pub fn can_back_merge(&self, next: &Request, max_bytes: u32) -> bool {
        self.op == next.op
            && self.op.is_data()
            && self.fua == next.fua
            && self.prio == next.prio
            && self.tenant == next.tenant
            && self.end_offset() == next.offset_bytes
            && u64::from(self.len_bytes) + u64::from(next.len_bytes) <= u64::from(max_bytes)
    }

    /// Which end of this (queued) request `rq` could join, following or preceding it
    /// under [`Request::can_back_merge`]'s rules, if either.
    pub fn merge_side(&self, rq: &Request, max_bytes: u32) -> Option<MergeSide> {
        if self.can_back_merge(rq, max_bytes) {
            Some(MergeSide::Back)
        } else if rq.can_back_merge(self, max_bytes) {
            Some(MergeSide::Front)
        } else {
            None
        }
    }

    /// Grows this (queued) request to cover `rq` where [`Request::merge_side`] allows;
    /// says which end it joined.
    pub fn absorb(&mut self, rq: &Request, max_bytes: u32) -> Option<MergeSide> {
        let side = self.merge_side(rq, max_bytes)?;
        if side == MergeSide::Front {
            self.offset_bytes = rq.offset_bytes;
        }
        self.len_bytes += rq.len_bytes;
        Some(side)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absorb_grows_the_queued_request_at_either_end_within_the_limit() {
        let mut queued = Request::read(1, 8192);
        assert_eq!(queued.absorb(&Request::read(2, 12288), MAX_MERGE_BYTES), Some(MergeSide::Back));
        assert_eq!((queued.offset_bytes, queued.len_bytes), (8192, 8192));
        assert_eq!(queued.absorb(&Request::read(3, 4096), MAX_MERGE_BYTES), Some(MergeSide::Front));
        assert_eq!((queued.offset_bytes, queued.len_bytes), (4096, 12288));
        // a gap, another direction, or a result over the limit: untouched
        assert_eq!(queued.absorb(&Request::read(4, 20480), MAX_MERGE_BYTES), None);
        assert_eq!(queued.absorb(&Request::write(5, 16384), MAX_MERGE_BYTES), None);
        assert_eq!(queued.absorb(&Request::read(6, 16384), 12288), None);
        assert_eq!((queued.offset_bytes, queued.len_bytes), (4096, 12288));
    }
}
