//! The `[nand]` section of a profile and the geometry derived from it.

use serde::Deserialize;

/// Bytes per logical page (the mapping unit).
pub const LPN_BYTES: u64 = 4096;

/// GC victim choice.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GcPolicy {
    /// Fewest valid pages.
    Greedy,
    /// Rosenblum & Ousterhout: maximise age * (1 - u) / (1 + u).
    CostBenefit,
}

/// Parameters of the flash-based model. Times carry their unit in the name.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NandConfig {
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    /// Erase blocks per die (each spans all planes: multi-plane operation).
    pub blocks_per_die: u32,
    /// Pages per block per plane in the native cell mode.
    pub pages_per_block: u32,
    pub page_bytes: u32,
    /// Bits per cell of the native mode: 2 = MLC, 3 = TLC.
    pub cell_bits: u32,
    /// Native-mode page read (tR).
    pub t_read_us: f64,
    /// Spread of native read times over the page types of a word line: the lowest page
    /// reads in t_read * (1 - spread), the highest in t_read * (1 + spread).
    #[serde(default)]
    pub t_read_spread: f64,
    /// SLC-mode page read.
    pub t_read_slc_us: f64,
    /// Native-mode program of one word line (`cell_bits` pages per plane, all planes).
    pub t_prog_us: f64,
    /// SLC-mode page program (all planes).
    pub t_prog_slc_us: f64,
    pub t_erase_us: f64,
    /// Flash channel transfer rate.
    pub channel_mbps: f64,
    /// Host link (PCIe or SATA) rate per direction.
    pub link_mbps: f64,
    /// SATA: reads and writes share one link direction.
    #[serde(default)]
    pub link_half_duplex: bool,
    /// Controller time per read command that serialises commands (limits IOPS).
    pub ctrl_read_occupancy_ns: u64,
    pub ctrl_write_occupancy_ns: u64,
    /// Controller latency per command that overlaps with other commands.
    pub ctrl_read_latency_ns: u64,
    pub ctrl_write_latency_ns: u64,
    /// Volatile DRAM write buffer.
    pub write_buffer_bytes: u64,
    /// Power-loss protection: the buffer is durable, FUA and flush complete when buffered.
    #[serde(default)]
    pub power_loss_protection: bool,
    /// SLC cache always available (0 for drives without one).
    pub slc_static_bytes: u64,
    /// Extra SLC cache while enough user space is unwritten (TurboWrite's "intelligent"
    /// part): min(this, unwritten user bytes / cell_bits).
    pub slc_dynamic_max_bytes: u64,
    pub gc_policy: GcPolicy,
    /// Per die: below this many free blocks, GC runs alongside host writes.
    pub gc_soft_free_blocks: u32,
    /// Per die: at or below this, a host program waits until GC frees a block.
    pub gc_hard_free_blocks: u32,
    /// Per die: idle-time GC works until this many blocks are free.
    pub bg_gc_free_blocks: u32,
    /// Quiet time before background folding and GC start.
    pub idle_us: f64,
    /// Internal read-ahead for sequential reads (0 = off): how far ahead of a detected
    /// stream the controller fetches.
    #[serde(default)]
    pub read_ahead_bytes: u64,
    /// GC and folding copy inside the die (no channel transfer).
    #[serde(default = "yes")]
    pub copyback: bool,
    /// The planes of a die sense different pages at the same time. NAND before
    /// independent multi-plane reads (before ~2020) senses one page per die at a time,
    /// so random reads are limited by dies, not planes.
    #[serde(default = "yes")]
    pub independent_plane_reads: bool,
    /// Host reads go ahead of the work booked but not started on their die (programs
    /// of buffered data, erases, GC steps), as firmware that schedules reads first (or
    /// suspends programs) does: a read waits for the operation in progress only, and the
    /// die's backlog absorbs the read's sense time. Off: a read waits behind everything
    /// booked on its die before it, which with a large DRAM buffer is its whole flush
    /// backlog.
    #[serde(default)]
    pub read_priority: bool,
    /// Drive state before the run: clean, partial:F or full.
    #[serde(default = "clean")]
    pub precondition: String,
}

fn yes() -> bool {
    true
}
fn clean() -> String {
    "clean".into()
}

/// Sizes derived from a config and the user capacity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub channels: u32,
    pub dies: u32,
    pub planes: u32,
    pub blocks_per_die: u32,
    pub blocks: u32,
    /// Logical pages per flash page (per plane).
    pub lpns_per_page: u32,
    /// Slots (4 KiB) per block in native mode.
    pub slots_per_block: u32,
    /// Slots per block in SLC mode.
    pub slc_slots_per_block: u32,
    /// Slots written by one native program (a word line on every plane).
    pub unit_slots: u32,
    /// Slots written by one SLC program (one page on every plane).
    pub slc_unit_slots: u32,
    pub user_lpns: u32,
}

impl Geometry {
    pub fn new(cfg: &NandConfig, capacity_bytes: u64) -> Result<Geometry, String> {
        let positive = [
            ("channels", cfg.channels),
            ("dies_per_channel", cfg.dies_per_channel),
            ("planes_per_die", cfg.planes_per_die),
            ("blocks_per_die", cfg.blocks_per_die),
            ("pages_per_block", cfg.pages_per_block),
        ];
        for (name, v) in positive {
            if v == 0 {
                return Err(format!("nand.{name} must be > 0"));
            }
        }
        if !(1..=4).contains(&cfg.cell_bits) {
            return Err("nand.cell_bits must be 1..=4".into());
        }
        if cfg.page_bytes == 0 || u64::from(cfg.page_bytes) % LPN_BYTES != 0 {
            return Err("nand.page_bytes must be a positive multiple of 4096".into());
        }
        if !cfg.pages_per_block.is_multiple_of(cfg.cell_bits) {
            return Err("nand.pages_per_block must be a multiple of cell_bits".into());
        }
        for (name, v) in [
            ("t_read_us", cfg.t_read_us),
            ("t_read_slc_us", cfg.t_read_slc_us),
            ("t_prog_us", cfg.t_prog_us),
            ("t_prog_slc_us", cfg.t_prog_slc_us),
            ("t_erase_us", cfg.t_erase_us),
            ("channel_mbps", cfg.channel_mbps),
            ("link_mbps", cfg.link_mbps),
            ("idle_us", cfg.idle_us),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("nand.{name} must be a positive number"));
            }
        }
        if !(0.0..1.0).contains(&cfg.t_read_spread) {
            return Err("nand.t_read_spread must be in [0, 1)".into());
        }
        if cfg.gc_hard_free_blocks < 2 || cfg.gc_soft_free_blocks <= cfg.gc_hard_free_blocks {
            return Err("nand: need gc_soft_free_blocks > gc_hard_free_blocks >= 2".into());
        }
        let lpns_per_page = cfg.page_bytes / LPN_BYTES as u32;
        let slots_per_block = cfg.pages_per_block * cfg.planes_per_die * lpns_per_page;
        let dies = cfg.channels * cfg.dies_per_channel;
        let blocks = dies.checked_mul(cfg.blocks_per_die).ok_or("nand: too many blocks")?;
        let raw_slots = u64::from(blocks) * u64::from(slots_per_block);
        if raw_slots >= u64::from(u32::MAX) - 2 {
            return Err("nand: more than 2^32 4 KiB slots; use a smaller geometry".into());
        }
        let user_lpns = capacity_bytes / LPN_BYTES;
        if user_lpns >= raw_slots {
            return Err(format!(
                "nand: capacity {capacity_bytes} bytes exceeds the raw flash ({} bytes)",
                raw_slots * LPN_BYTES
            ));
        }
        let spare_blocks_per_die = (raw_slots - user_lpns) / u64::from(slots_per_block) / u64::from(dies);
        if spare_blocks_per_die <= u64::from(cfg.gc_soft_free_blocks) + 1 {
            return Err(format!(
                "nand: {spare_blocks_per_die} spare blocks per die cannot keep gc_soft_free_blocks ({}) free",
                cfg.gc_soft_free_blocks
            ));
        }
        Ok(Geometry {
            channels: cfg.channels,
            dies,
            planes: cfg.planes_per_die,
            blocks_per_die: cfg.blocks_per_die,
            blocks,
            lpns_per_page,
            slots_per_block,
            slc_slots_per_block: slots_per_block / cfg.cell_bits,
            unit_slots: cfg.cell_bits * cfg.planes_per_die * lpns_per_page,
            slc_unit_slots: cfg.planes_per_die * lpns_per_page,
            user_lpns: user_lpns as u32,
        })
    }

    /// Raw slots over user slots, minus one.
    pub fn over_provisioning(&self) -> f64 {
        (f64::from(self.blocks) * f64::from(self.slots_per_block)) / f64::from(self.user_lpns) - 1.0
    }

    #[inline]
    pub fn die_of_block(&self, block: u32) -> u32 {
        block / self.blocks_per_die
    }
    #[inline]
    pub fn channel_of_die(&self, die: u32) -> u32 {
        die % self.channels
    }
    #[inline]
    pub fn block_of_slot(&self, slot: u32) -> u32 {
        slot / self.slots_per_block
    }
    /// (plane, flash page within the block) holding a slot.
    #[inline]
    pub fn plane_page_of_slot(&self, slot: u32) -> (u32, u32) {
        let within = slot % self.slots_per_block;
        let page_group = within / self.lpns_per_page;
        (page_group % self.planes, page_group / self.planes)
    }
}
