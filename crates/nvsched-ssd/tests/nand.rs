//! The flash model's mechanisms on a small drive: what waits for what, GC's invariants,
//! write amplification against the analytical model, and preconditioning against
//! actually writing.

use nvsched_core::{Nanos, Op, SimRng};
use nvsched_ssd::nand::config::{Geometry, LPN_BYTES};
use nvsched_ssd::nand::ftl::{lrw_write_amplification, Ftl, Lookup, Stream};
use nvsched_ssd::{Command, Device, DriveStates, GcPolicy, NandConfig, NandDevice};

/// 4 dies of 2 planes, 96 blocks each, 48 pages per block (TLC), 16 KiB pages.
fn small_config() -> NandConfig {
    NandConfig {
        channels: 2,
        dies_per_channel: 2,
        planes_per_die: 2,
        blocks_per_die: 96,
        pages_per_block: 48,
        page_bytes: 16384,
        cell_bits: 3,
        t_read_us: 50.0,
        t_read_spread: 0.0,
        t_read_slc_us: 25.0,
        t_prog_us: 1500.0,
        t_prog_slc_us: 150.0,
        t_erase_us: 3000.0,
        channel_mbps: 800.0,
        link_mbps: 3500.0,
        link_half_duplex: false,
        ctrl_read_occupancy_ns: 2000,
        ctrl_write_occupancy_ns: 1000,
        ctrl_read_latency_ns: 0,
        ctrl_write_latency_ns: 5000,
        write_buffer_bytes: 1 << 20,
        power_loss_protection: false,
        slc_static_bytes: 0,
        slc_dynamic_max_bytes: 0,
        gc_policy: GcPolicy::Greedy,
        gc_soft_free_blocks: 6,
        gc_hard_free_blocks: 2,
        bg_gc_free_blocks: 7,
        idle_us: 1000.0,
        copyback: true,
        read_ahead_bytes: 0,
        independent_plane_reads: true,
        read_priority: false,
        precondition: "clean".into(),
    }
}

/// User capacity leaving `op` over-provisioning.
fn capacity_for(cfg: &NandConfig, op: f64) -> u64 {
    let raw = u64::from(cfg.channels * cfg.dies_per_channel * cfg.blocks_per_die)
        * u64::from(cfg.pages_per_block * cfg.planes_per_die)
        * u64::from(cfg.page_bytes);
    ((raw as f64 / (1.0 + op)) as u64) / LPN_BYTES * LPN_BYTES
}

/// A small device half written sequentially; `tweak` adjusts its configuration first.
fn half_full(tweak: impl FnOnce(&mut NandConfig)) -> NandDevice {
    let mut cfg = small_config();
    cfg.precondition = "partial:0.5".into();
    tweak(&mut cfg);
    device(cfg, 0.15)
}

fn device(cfg: NandConfig, op: f64) -> NandDevice {
    let cap = capacity_for(&cfg, op);
    NandDevice::new(cfg, 256, cap, 1, &mut |_| true).unwrap()
}

fn cmd(op: Op, lpn: u64, lpns: u32, fua: bool) -> Command {
    Command { op, offset_bytes: lpn * LPN_BYTES, len_bytes: lpns * LPN_BYTES as u32, fua }
}

/// Random host writes through the FTL alone, GC'ing like the device does when a die
/// runs short, over `region` logical pages. Returns (host, nand) slots written.
fn random_writes(ftl: &mut Ftl, writes: u64, region: u32, rng: &mut SimRng, hard: u32) -> (u64, u64) {
    let unit = ftl.geo.unit_slots;
    let (h0, n0) = (ftl.counters.host_slots_written, ftl.counters.nand_slots_written);
    let mut done = 0;
    while done < writes {
        let die = ftl.next_host_die();
        while ftl.free_blocks(die) <= hard {
            ftl.gc_step(die).expect("a victim exists");
        }
        for _ in 0..unit {
            let lpn = rng.below(u64::from(region)) as u32;
            ftl.write(lpn, die, Stream::Host);
        }
        done += u64::from(unit);
    }
    (ftl.counters.host_slots_written - h0, ftl.counters.nand_slots_written - n0)
}

#[test]
fn a_read_on_a_programming_die_waits_for_the_program() {
    let mut d = half_full(|_| {});
    let geo = d.geometry().clone();
    // the sequential fill put lpn die * unit_slots on `die`
    let lpn_on = |die: u32| u64::from(die * geo.unit_slots);
    let baseline = d.submit(&cmd(Op::Read, lpn_on(1), 1, false), Nanos::ZERO);
    // a FUA write programs right away on the die the host stripe points at
    let die = d.ftl().peek_host_die();
    let t0 = Nanos::from_ms(10);
    let last_lpn = u64::from(geo.user_lpns) - 1;
    let programmed = d.submit(&cmd(Op::Write, last_lpn, 1, true), t0);
    assert!(programmed - t0 >= Nanos::from_us(1500), "FUA waits for its program: {}", programmed - t0);
    let t1 = t0 + Nanos::from_us(300);
    let behind = d.submit(&cmd(Op::Read, lpn_on(die), 1, false), t1);
    assert!(behind >= programmed + Nanos::from_us(50), "the read queues behind the program: {behind} vs {programmed}");
    let other = (die + 1) % geo.dies;
    let free = d.submit(&cmd(Op::Read, lpn_on(other), 1, false), t1);
    assert!(free - t1 <= baseline + Nanos::from_us(5), "a read on another die is not delayed: {}", free - t1);
    assert_eq!(d.counters(Nanos::from_ms(20)).reads_behind_program, 1);
}

#[test]
fn plain_writes_complete_at_buffer_speed_fua_after_the_program_flush_waits() {
    let mut d = device(small_config(), 0.15);
    let plain = d.submit(&cmd(Op::Write, 10, 1, false), Nanos::ZERO);
    assert!(plain < Nanos::from_us(20), "buffered write: {plain}");
    let t = Nanos::from_ms(1);
    let fua = d.submit(&cmd(Op::Write, 20, 1, true), t);
    assert!(fua - t >= Nanos::from_us(1500), "FUA waits for a native program: {}", fua - t);
    // data written but not programmed is on the media only after a flush
    let t2 = Nanos::from_ms(10);
    let w = d.submit(&cmd(Op::Write, 30, 1, false), t2);
    assert!(w - t2 < Nanos::from_us(20));
    let f = d.submit(&cmd(Op::Flush, 0, 0, false), t2 + Nanos::from_us(20));
    assert!(f - t2 >= Nanos::from_us(1500), "flush waits for buffered data: {}", f - t2);
    // a read of buffered data is a buffer hit
    let t3 = Nanos::from_ms(30);
    d.submit(&cmd(Op::Write, 40, 1, false), t3);
    let r = d.submit(&cmd(Op::Read, 40, 1, false), t3 + Nanos::from_us(20));
    assert!(r - (t3 + Nanos::from_us(20)) < Nanos::from_us(10));
    assert!(d.counters(t3).buffer_read_hits >= 1);
}

#[test]
fn power_loss_protection_makes_fua_and_flush_cheap() {
    let mut cfg = small_config();
    cfg.power_loss_protection = true;
    let mut d = device(cfg, 0.15);
    let fua = d.submit(&cmd(Op::Write, 20, 1, true), Nanos::ZERO);
    assert!(fua < Nanos::from_us(20));
    let f = d.submit(&cmd(Op::Flush, 0, 0, false), Nanos::from_us(30));
    assert!(f - Nanos::from_us(30) < Nanos::from_us(10));
}

#[test]
fn gc_keeps_free_blocks_at_the_hard_threshold_through_long_random_writes() {
    let mut cfg = small_config();
    cfg.precondition = "full".into();
    let mut d = device(cfg.clone(), 0.15);
    let user = u64::from(d.geometry().user_lpns);
    let mut rng = SimRng::seed_from(5);
    let mut t = Nanos::ZERO;
    for _ in 0..(user * 3) {
        let lpn = rng.below(user);
        let done = d.submit(&cmd(Op::Write, lpn, 1, false), t);
        t = t.max(done.saturating_sub(Nanos::from_us(200))) + Nanos(500);
    }
    let c = d.counters(t);
    assert!(c.gc_runs > 100, "GC ran: {}", c.gc_runs);
    assert!(c.extra("min_free_blocks_per_die").unwrap() >= f64::from(cfg.gc_hard_free_blocks - 1));
    assert!(c.write_amplification > 1.5, "{}", c.write_amplification);
    d.ftl().check_consistency().unwrap();
}

#[test]
fn activity_series_end_with_the_run_though_work_is_booked_beyond_it() {
    let mut d = device(small_config(), 0.15);
    let user = u64::from(d.geometry().user_lpns);
    // writes all submitted at once: the dies are booked seconds ahead
    let mut last_done = Nanos::ZERO;
    for i in 0..1_000_000u64 {
        last_done = d.submit(&cmd(Op::Write, i % user, 1, false), Nanos::ZERO);
        if last_done > Nanos::from_ms(2500) {
            break;
        }
    }
    assert!(last_done > Nanos::from_ms(2500), "the dies were not booked ahead: {last_done:?}");
    for s in d.counters(Nanos::from_ms(500)).series {
        assert!(s.values.len() <= 1, "{}: {} seconds of a half-second run", s.name, s.values.len());
    }
}

#[test]
fn write_amplification_rises_with_occupancy() {
    let cfg = small_config();
    let geo = Geometry::new(&cfg, capacity_for(&cfg, 0.10)).unwrap();
    let mut was = Vec::new();
    for fraction in [0.5, 0.75, 0.95] {
        let mut ftl = Ftl::new(geo.clone(), GcPolicy::Greedy);
        let region = (f64::from(geo.user_lpns) * fraction) as u32;
        let mut rng = SimRng::seed_from(9);
        random_writes(&mut ftl, u64::from(geo.user_lpns) * 4, region, &mut rng, 2);
        let (h, n) = random_writes(&mut ftl, u64::from(geo.user_lpns) * 4, region, &mut rng, 2);
        was.push(n as f64 / h as f64);
        ftl.check_consistency().unwrap();
    }
    assert!(was[0] < was[1] && was[1] < was[2], "{was:?}");
    assert!(was[0] < 1.3 && was[2] > 3.0, "{was:?}");
}

/// Steady-state WA of uniform random 4 KiB writes under greedy GC vs the analytical
/// LRW model of Desnoyers ("Analytic models of SSD write performance", SYSTOR 2012;
/// TOS 2014): with utilisation rho = user pages / physical pages in use, the cleaned
/// block's valid fraction u solves u = exp(-(1 - u) / rho) and WA = 1 / (1 - u). For
/// uniform traffic greedy cleaning tracks this model (it picks nearly the oldest block).
#[test]
fn steady_state_write_amplification_matches_the_lrw_model() {
    let cfg = small_config();
    for op in [0.10, 0.15, 0.28] {
        let geo = Geometry::new(&cfg, capacity_for(&cfg, op)).unwrap();
        let mut ftl = Ftl::new(geo.clone(), GcPolicy::Greedy);
        let mut rng = SimRng::seed_from(3);
        let u = geo.user_lpns;
        random_writes(&mut ftl, u64::from(u) * 8, u, &mut rng, 2);
        let (h, n) = random_writes(&mut ftl, u64::from(u) * 8, u, &mut rng, 2);
        let measured = n as f64 / h as f64;
        // pages in use: all but the ~3 blocks per die GC keeps free (hard threshold + the
        // open host and relocation blocks)
        let in_use = (f64::from(geo.blocks) - 3.0 * f64::from(geo.dies)) * f64::from(geo.slots_per_block);
        let model = lrw_write_amplification(f64::from(u) / in_use);
        let err = measured / model - 1.0;
        assert!(err.abs() < 0.10, "OP {op}: measured WA {measured:.3}, LRW model {model:.3} ({:+.1}%)", err * 100.0);
    }
}

#[test]
fn steady_state_precondition_matches_writing_it() {
    let cfg = small_config();
    let geo = Geometry::new(&cfg, capacity_for(&cfg, 0.15)).unwrap();
    // written: sequential fill, then random overwrites until steady
    let mut written = Ftl::new(geo.clone(), GcPolicy::Greedy);
    written.precondition_sequential(1.0, &mut |_| true).unwrap();
    let mut rng = SimRng::seed_from(11);
    random_writes(&mut written, u64::from(geo.user_lpns) * 10, geo.user_lpns, &mut rng, 2);
    // generated directly
    let mut direct = Ftl::new(geo.clone(), GcPolicy::Greedy);
    direct.precondition_steady_state(11, 3, &mut |_| true).unwrap();
    direct.check_consistency().unwrap();
    assert_eq!(direct.mapped_lpns(), u64::from(geo.user_lpns));
    let s = f64::from(geo.slots_per_block);
    let dist = |f: &Ftl| {
        let mut v: Vec<f64> = f.full_block_valid_counts().iter().map(|&x| f64::from(x) / s).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (a, b) = (dist(&written), dist(&direct));
    let q = |v: &[f64], p: f64| v[((v.len() - 1) as f64 * p) as usize];
    for p in [0.05, 0.25, 0.5, 0.75, 0.95] {
        let (x, y) = (q(&a, p), q(&b, p));
        assert!((x - y).abs() < 0.06, "valid fraction at quantile {p}: written {x:.3}, generated {y:.3}");
    }
    // and GC from the generated state behaves like GC from the written one
    let (h1, n1) = random_writes(&mut written, u64::from(geo.user_lpns) * 2, geo.user_lpns, &mut rng, 2);
    let (h2, n2) = random_writes(&mut direct, u64::from(geo.user_lpns) * 2, geo.user_lpns, &mut rng, 2);
    let (wa1, wa2) = (n1 as f64 / h1 as f64, n2 as f64 / h2 as f64);
    assert!((wa1 / wa2 - 1.0).abs() < 0.08, "WA after written {wa1:.3} vs generated {wa2:.3}");
}

#[test]
fn partial_precondition_equals_a_sequential_fill_through_the_device() {
    let mut cfg = small_config();
    cfg.precondition = "partial:0.5".into();
    let direct = device(cfg.clone(), 0.15);
    cfg.precondition = "clean".into();
    let mut written = device(cfg, 0.15);
    let half = direct.geometry().user_lpns / 2;
    let unit = direct.geometry().unit_slots;
    let mut t = Nanos::ZERO;
    let mut lpn = 0u32;
    while lpn < half {
        let n = unit.min(half - lpn);
        t = written.submit(&cmd(Op::Write, u64::from(lpn), n, false), t);
        lpn += n;
    }
    written.submit(&cmd(Op::Flush, 0, 0, false), t);
    let geo = direct.geometry().clone();
    for lpn in (0..half).step_by(7) {
        let die = |d: &NandDevice| match d.ftl().lookup(lpn) {
            nvsched_ssd::nand::ftl::Lookup::Slot(s) => geo.die_of_block(geo.block_of_slot(s)),
            other => panic!("lpn {lpn}: {other:?}"),
        };
        assert_eq!(die(&direct), die(&written), "lpn {lpn} on the same die");
    }
    assert_eq!(direct.ftl().mapped_lpns(), written.ftl().mapped_lpns());
}

#[test]
fn laying_out_a_range_gives_its_empty_pages_data_and_keeps_what_is_written() {
    let mut cfg = small_config();
    cfg.precondition = "partial:0.25".into();
    let mut dev = device(cfg.clone(), 0.15);
    let untouched = device(cfg.clone(), 0.15);
    let quarter = u64::from(dev.geometry().user_lpns / 4);
    // a range from inside the written quarter to past it, its last page covered in part
    let (first, end) = (quarter - 100, quarter + 1000);
    dev.lay_out(&[(first * LPN_BYTES, (end - first) * LPN_BYTES - 100)]);
    for lpn in 0..quarter as u32 {
        assert_eq!(dev.ftl().lookup(lpn), untouched.ftl().lookup(lpn), "lpn {lpn} keeps its data where it was");
    }
    assert_eq!(dev.ftl().mapped_lpns(), end, "the pages up to the range's end, the partly covered one too");
    assert_eq!(dev.ftl().lookup(end as u32), Lookup::Unmapped);
    dev.ftl().check_consistency().unwrap();
    // laying out is not part of the run: its counters start at zero
    let c = dev.counters(Nanos::ZERO);
    assert_eq!((c.host_pages_written, c.nand_pages_written, c.gc_runs), (0, 0, 0));
    // a read of a laid-out page senses the flash (50 us); one past the range does not
    let t = dev.submit(&cmd(Op::Read, quarter + 500, 1, false), Nanos::ZERO);
    assert!(t >= Nanos::from_us(50), "{t:?}");
    let t2 = dev.submit(&cmd(Op::Read, end + 10, 1, false), t);
    assert!(t2 - t < Nanos::from_us(20), "{:?}", t2 - t);
    // on a clean drive, laying out the first quarter leaves what the partial state does
    let partial = untouched;
    cfg.precondition = "clean".into();
    let mut laid = device(cfg, 0.15);
    laid.lay_out(&[(0, quarter * LPN_BYTES)]);
    for lpn in 0..quarter as u32 {
        assert_eq!(laid.ftl().lookup(lpn), partial.ftl().lookup(lpn), "lpn {lpn}");
    }
}

#[test]
fn trim_saves_gc_copies() {
    let cfg = small_config();
    let geo = Geometry::new(&cfg, capacity_for(&cfg, 0.10)).unwrap();
    let run = |trim: bool| {
        let mut ftl = Ftl::new(geo.clone(), GcPolicy::Greedy);
        ftl.precondition_sequential(1.0, &mut |_| true).unwrap();
        if trim {
            for lpn in geo.user_lpns / 2..geo.user_lpns {
                ftl.trim(lpn);
            }
        }
        let mut rng = SimRng::seed_from(4);
        let (h, n) = random_writes(&mut ftl, u64::from(geo.user_lpns), geo.user_lpns / 2, &mut rng, 2);
        ftl.check_consistency().unwrap();
        n as f64 / h as f64
    };
    let (with, without) = (run(true), run(false));
    assert!(with < without * 0.8, "trimmed {with:.3} vs not {without:.3}");
}

#[test]
fn slc_cache_absorbs_then_writes_drop_to_native_speed() {
    let mut cfg = small_config();
    cfg.slc_static_bytes = 8 << 20;
    cfg.write_buffer_bytes = 256 << 10;
    let mut d = device(cfg, 0.25);
    let mut t = Nanos::ZERO;
    let mut completions = Vec::new();
    for i in 0..2048u64 {
        // 2048 x 16 KiB = 32 MiB of sequential writes, as fast as the drive takes them
        t = d.submit(&cmd(Op::Write, i * 4, 4, false), t);
        completions.push(t);
    }
    let rate = |a: usize, b: usize| ((b - a) as f64 * 16384.0) / (completions[b] - completions[a]).as_secs_f64() / 1e6;
    let early = rate(64, 256);
    let late = rate(1700, 2047);
    assert!(early > 4.0 * late, "SLC {early:.0} MB/s vs native {late:.0} MB/s");
    assert!(d.counters(t).slc_writes > 0);
}

#[test]
fn without_independent_plane_reads_a_die_senses_one_page_at_a_time() {
    let run = |independent: bool| {
        let mut d = half_full(|cfg| cfg.independent_plane_reads = independent);
        let geo = d.geometry().clone();
        let where_is = |d: &NandDevice, lpn: u32| match d.ftl().lookup(lpn) {
            Lookup::Slot(s) => (geo.die_of_block(geo.block_of_slot(s)), geo.plane_page_of_slot(s).0),
            _ => panic!("lpn {lpn} is written"),
        };
        // two pages of die 0 on different planes
        let a = 0u32;
        let b = (1..geo.unit_slots)
            .find(|&l| where_is(&d, l).0 == where_is(&d, a).0 && where_is(&d, l).1 != where_is(&d, a).1)
            .expect("a page on the other plane");
        let first = d.submit(&cmd(Op::Read, u64::from(a), 1, false), Nanos::ZERO);
        let second = d.submit(&cmd(Op::Read, u64::from(b), 1, false), Nanos::ZERO);
        (first, second)
    };
    let (first, second) = run(true);
    assert!(second < first + Nanos::from_us(25), "planes sense in parallel: {first} then {second}");
    let (first, second) = run(false);
    assert!(second >= first + Nanos::from_us(40), "the second sense waits for the first: {first} then {second}");
}

#[test]
fn read_ahead_speeds_up_sequential_reads_at_qd1() {
    let run = |read_ahead: u64| {
        let mut d = half_full(|cfg| cfg.read_ahead_bytes = read_ahead);
        let mut t = Nanos::ZERO;
        for lpn in 0..512u64 {
            t = d.submit(&cmd(Op::Read, lpn, 1, false), t);
        }
        (t, d.counters(t).extra("read_ahead_hits").unwrap())
    };
    let (without, hits0) = run(0);
    let (with, hits) = run(256 << 10);
    assert_eq!(hits0, 0.0);
    assert!(hits > 400.0, "{hits}");
    assert!(with.0 * 2 < without.0, "read-ahead {with} vs none {without}");
}

#[test]
fn a_copied_drive_state_behaves_exactly_as_a_fresh_one() {
    let mut cfg = small_config();
    cfg.precondition = "full".into();
    let cap = capacity_for(&cfg, 0.15);
    let states = DriveStates::new();
    // random overwrites with GC: every completion time must match
    let completions = |mut d: NandDevice| -> Vec<Nanos> {
        let mut rng = SimRng::seed_from(7);
        let lpns = cap / LPN_BYTES;
        (0..4000u64).map(|i| d.submit(&cmd(Op::Write, rng.below(lpns), 1, false), Nanos(i * 2_000))).collect()
    };
    let fresh = completions(NandDevice::new(cfg.clone(), 256, cap, 3, &mut |_| true).unwrap());
    let first = completions(NandDevice::new_from(cfg.clone(), 256, cap, 3, &states, &mut |_| true).unwrap());
    let copied = completions(NandDevice::new_from(cfg.clone(), 256, cap, 3, &states, &mut |_| true).unwrap());
    assert_eq!(first, fresh);
    assert_eq!(copied, fresh, "a run from the kept state matches a fresh build");
    let other_seed = completions(NandDevice::new_from(cfg, 256, cap, 4, &states, &mut |_| true).unwrap());
    assert_ne!(other_seed, fresh, "a full drive's state depends on the seed");
}

#[test]
fn preconditioning_reports_its_progress_and_stops_when_told() {
    for state in ["partial:0.8", "full"] {
        let mut cfg = small_config();
        cfg.precondition = state.into();
        let cap = capacity_for(&cfg, 0.15);
        let mut heard = Vec::new();
        NandDevice::new(cfg.clone(), 256, cap, 1, &mut |done| {
            heard.push(done);
            true
        })
        .unwrap();
        assert!(heard.len() >= 2, "{state}: heard {heard:?}");
        assert!(heard.windows(2).all(|w| w[0] <= w[1]), "{state}: progress goes forward: {heard:?}");
        assert_eq!(heard.last(), Some(&1.0), "{state}: ends done");
        // stopped half way: no drive, and the error says why
        let err = NandDevice::new(cfg.clone(), 256, cap, 1, &mut |done| done < 0.5).err().unwrap();
        assert_eq!(err, format!("interrupted while preparing its {state} state"));
        // a stopped shared state stays unbuilt for the sweep's other runs
        let states = DriveStates::new();
        assert!(NandDevice::new_from(cfg.clone(), 256, cap, 1, &states, &mut |_| false).is_err());
        assert!(NandDevice::new_from(cfg, 256, cap, 1, &states, &mut |_| true).is_err());
    }
    // the sequential fill, reported in chunks, lays the pages out as one fill does
    let cfg = small_config();
    let geo = Geometry::new(&cfg, capacity_for(&cfg, 0.15)).unwrap();
    let mut chunked = Ftl::new(geo.clone(), GcPolicy::Greedy);
    chunked.precondition_sequential(0.7, &mut |_| true).unwrap();
    let mut whole = Ftl::new(geo.clone(), GcPolicy::Greedy);
    whole.fill_sequential(std::iter::once(0..(f64::from(geo.user_lpns) * 0.7) as u64));
    assert!((0..geo.user_lpns).all(|lpn| chunked.lookup(lpn) == whole.lookup(lpn)));
}

#[test]
fn runs_from_a_kept_state_share_it_until_they_write_and_build_it_once() {
    let mut cfg = small_config();
    cfg.precondition = "partial:0.5".into();
    let cap = capacity_for(&cfg, 0.15);
    let states = DriveStates::new();
    // runs starting at once: one builds the state, the others wait for it
    let devices: Vec<NandDevice> = std::thread::scope(|s| {
        let builds: Vec<_> = (0..4)
            .map(|_| s.spawn(|| NandDevice::new_from(cfg.clone(), 256, cap, 1, &states, &mut |_| true).unwrap()))
            .collect();
        builds.into_iter().map(|b| b.join().unwrap()).collect()
    });
    assert!(devices.iter().all(|d| std::ptr::eq(d.ftl(), devices[0].ftl())), "one state, built once and shared");
    let (mut reader, mut writer) = {
        let mut it = devices.into_iter();
        (it.next().unwrap(), it.next().unwrap())
    };
    // reads, and laying out files that hold data already, leave the state shared
    reader.lay_out(&[(0, 1 << 20)]);
    for i in 0..200u64 {
        reader.submit(&cmd(Op::Read, i * 7, 1, false), Nanos(i * 100_000));
    }
    assert!(std::ptr::eq(reader.ftl(), writer.ftl()), "a reader does not copy the state");
    let before = writer.ftl().lookup(3);
    writer.submit(&cmd(Op::Write, 3, 1, false), Nanos::ZERO);
    writer.submit(&cmd(Op::Write, 3, 1, false), Nanos(10_000_000));
    assert!(!std::ptr::eq(reader.ftl(), writer.ftl()), "a writer works on its own copy");
    assert_ne!(writer.ftl().lookup(3), before);
    assert_eq!(reader.ftl().lookup(3), before, "the kept state is unchanged");
    let late = NandDevice::new_from(cfg, 256, cap, 1, &states, &mut |_| true).unwrap();
    assert_eq!(late.ftl().lookup(3), before);
    late.ftl().check_consistency().unwrap();
}

/// Writing every logical page once, back to back (no idle time for background folding),
/// with the SLC cache on: once free blocks run short, the blocks to reclaim are SLC
/// blocks (a third of a native block of data each) and native blocks full of valid data.
/// Collecting the latter frees nothing, so the SLC blocks must be folded; the fill ends,
/// free blocks stay at the hard threshold, and nothing is moved twice. (It once collected
/// full blocks forever: `fill_device`, or a write of a whole device, never ended.)
#[test]
fn a_sequential_fill_of_the_whole_drive_folds_the_slc_cache_and_ends() {
    let (done, results) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut cfg = small_config();
        // 64 SLC blocks of 512 KiB hold 21 native blocks' worth of data: they tie up 43
        // blocks more than the data needs, more than the 35 spare blocks
        cfg.slc_static_bytes = 32 << 20;
        let hard = cfg.gc_hard_free_blocks;
        let mut d = device(cfg, 0.10);
        let lpns = d.capacity_bytes() / LPN_BYTES;
        let mut t = Nanos::ZERO;
        for lpn in (0..lpns).step_by(32) {
            let n = (lpns - lpn).min(32) as u32;
            t = d.submit(&cmd(Op::Write, lpn, n, false), t);
        }
        t = d.submit(&cmd(Op::Flush, 0, 0, false), t);
        let min_free = (0..d.geometry().dies).map(|die| d.ftl().free_blocks(die)).min().unwrap();
        let _ = done.send((d.counters(t), d.ftl().mapped_lpns(), lpns, min_free, hard));
    });
    let (c, mapped, lpns, min_free, hard) =
        results.recv_timeout(std::time::Duration::from_secs(60)).expect("the fill ended within a minute");
    assert_eq!(mapped, lpns, "every logical page written");
    assert!(c.slc_writes > 0 && c.slc_folds > 0, "the cache took writes and was folded: {c:?}");
    assert!(min_free >= hard, "free blocks {min_free} below the hard threshold {hard}");
    // data is moved only out of the SLC cache: a fill leaves no native block to collect
    assert_eq!(c.gc_pages_moved, 0, "{c:?}");
}

#[test]
fn with_read_priority_a_read_waits_for_the_program_in_progress_only() {
    // 8 MiB of buffered writes book about 16 ms of programs ahead on every die;
    // a read of data on flash then waits behind all of them, or, with read priority,
    // only behind the program in progress (1.5 ms at most), and the programs after it
    // start later by the read's share of the die
    let run = |priority: bool| {
        let mut d = half_full(|cfg| {
            cfg.read_priority = priority;
            cfg.write_buffer_bytes = 8 << 20;
        });
        let geo = d.geometry().clone();
        let last = u64::from(geo.user_lpns) - 1;
        // one a microsecond, as a host at a deep queue submits them
        for i in 0..2048u64 {
            d.submit(&cmd(Op::Write, last - i, 1, false), Nanos::from_us(i));
        }
        let t = Nanos::from_us(3000);
        let read = d.submit(&cmd(Op::Read, 0, 1, false), t) - t;
        let behind = d.counters(t).reads_behind_program;
        // a write after the read: when the backlog lets its program go (the buffer is full)
        let next_write = d.submit(&cmd(Op::Write, last - 5000, 1, false), t);
        (read, behind, next_write)
    };
    let (fifo, fifo_behind, fifo_write) = run(false);
    let (first, first_behind, first_write) = run(true);
    assert!(fifo > Nanos::from_ms(10), "behind the whole backlog: {fifo}");
    assert!(first < Nanos::from_us(1500 + 200), "behind one program: {first}");
    assert_eq!((fifo_behind, first_behind), (1, 1), "both waited for a program");
    assert!(first_write >= fifo_write, "the read's die time delays what is booked after it");
}
