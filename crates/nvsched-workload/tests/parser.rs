//! The job-file parser: every supported option, its units, and a table of bad inputs
//! with the message each must produce.

use nvsched_core::{IoPrio, Nanos, Op, PrioClass};
use nvsched_workload::jobfile::Environment;
use nvsched_workload::*;
use std::path::Path;

struct TestEnv;
impl Environment for TestEnv {
    fn var(&self, name: &str) -> Option<String> {
        (name == "DEPTH").then(|| "16".to_string())
    }
    fn keyword(&self, name: &str) -> Option<u64> {
        (name == "pagesize").then_some(4096)
    }
}

fn parse(text: &str) -> Result<JobFile, JobFileError> {
    parse_job_str(text, Path::new("test.fio"), &TestEnv, ParseOptions::default())
}

fn job(body: &str) -> JobSpec {
    parse(&format!("[job]\n{body}\n")).unwrap_or_else(|e| panic!("{body}: {e}")).jobs.remove(0)
}

/// fio: a verify_pattern without a verify method is verify=pattern; with one, it fills
/// under the headers; the interval is cut to the smallest write.
#[test]
fn verify_pattern_and_interval_follow_fio() {
    let j = job("verify_pattern=0xaa55");
    assert!(j.verify && j.verify_format.pattern_only && j.verify_format.pattern == [0xaa, 0x55]);
    let j = job("verify=crc32c\nverify_pattern=0xaa55\nverify_interval=512");
    assert!(j.verify && !j.verify_format.pattern_only);
    assert_eq!(j.verify_format.interval, 512);
    assert_eq!(job("verify=md5\nbsrange=2k-8k\nverify_interval=4k").verify_format.interval, 2048);
}

#[test]
fn defaults_match_fio() {
    let j = job("");
    assert_eq!(j.name, "job");
    assert_eq!(j.pattern, Pattern::SeqRead);
    assert_eq!(j.bs[0], BlockSizes::Fixed(4096));
    assert_eq!(j.iodepth, 1);
    assert_eq!(j.ioengine, "psync");
    assert_eq!(j.engine_kind, EngineKind::Sync);
    assert_eq!(j.numjobs, 1);
    assert_eq!(j.rwmix_read_pct, 50);
    assert_eq!(j.randseed, 0x89);
    assert!(j.randrepeat);
    assert_eq!(j.percentile_list, DEFAULT_PERCENTILES.to_vec());
    assert_eq!(j.ioprio(), IoPrio::default());
}

#[test]
fn name_filename_description() {
    let j = job("name=renamed\nfilename=/dev/nvme0n1\ndescription=hello world");
    assert_eq!(j.name, "renamed");
    assert_eq!(j.filename.as_deref(), Some("/dev/nvme0n1"));
    assert_eq!(j.description.as_deref(), Some("hello world"));
    assert_eq!(job("filename=a\\:b").filename.as_deref(), Some("a:b"));
}

#[test]
fn a_trailing_comment_ends_the_value_as_in_fio() {
    // fio 3.33 runs 'bs=8k # comment' with bs 8k (it cuts lines at ';' and '#')
    assert_eq!(job("bs=8k # comment").bs[0], BlockSizes::Fixed(8192));
    assert_eq!(job("numjobs=4\t; four").numjobs, 4);
}

#[test]
fn directory_prefixes_file_names_as_fio_does() {
    // what fio 3.33 created for the same options (checked on this machine)
    assert_eq!(job("").file_name(1), "job.1.0");
    assert_eq!(job("directory=/d\nfilename=rel.dat").file_name(0), "/d/rel.dat");
    assert_eq!(job("directory=/d/\nfilename=/abs/x.dat").file_name(0), "/d/abs/x.dat", "absolute names too");
    let generated = job("directory=/d:/e\nnumjobs=2");
    assert_eq!((generated.file_name(0), generated.file_name(1)), ("/d/job.0.0".into(), "/e/job.1.0".into()));
    let named = job("directory=/d:/e\nfilename=two.dat");
    assert_eq!(named.file_name(1), "/d/two.dat", "a filename uses the first directory");
    assert_eq!(job("directory=/a\\:b").directory, ["/a:b"]);
    assert!(parse("[a]\ndirectory=:\n").is_err());
}

#[test]
fn rw_patterns() {
    for (v, p) in [
        ("read", Pattern::SeqRead),
        ("write", Pattern::SeqWrite),
        ("trim", Pattern::SeqTrim),
        ("randread", Pattern::RandRead),
        ("randwrite", Pattern::RandWrite),
        ("randtrim", Pattern::RandTrim),
        ("rw", Pattern::SeqMixed),
        ("readwrite", Pattern::SeqMixed),
        ("randrw", Pattern::RandMixed),
    ] {
        assert_eq!(job(&format!("rw={v}")).pattern, p, "{v}");
        assert_eq!(job(&format!("readwrite={v}")).pattern, p, "{v}");
    }
}

#[test]
fn rwmix_last_one_wins() {
    assert_eq!(job("rw=randrw\nrwmixread=70").rwmix_read_pct, 70);
    assert_eq!(job("rw=randrw\nrwmixwrite=30").rwmix_read_pct, 70);
    assert_eq!(job("rw=randrw\nrwmixread=10\nrwmixwrite=60").rwmix_read_pct, 40);
}

#[test]
fn block_sizes_per_direction() {
    let j = job("bs=8k,32k");
    assert_eq!(j.bs, [BlockSizes::Fixed(8192), BlockSizes::Fixed(32768), BlockSizes::Fixed(32768)]);
    let j = job("bs=8k,32k,");
    assert_eq!(j.bs[2], BlockSizes::Fixed(4096), "trailing comma: trim keeps the default");
    let j = job("blocksize=,16k");
    assert_eq!(j.bs[0], BlockSizes::Fixed(4096));
    assert_eq!(j.bs[1], BlockSizes::Fixed(16384));
    assert_eq!(job("bs=1mi").bs[0], BlockSizes::Fixed(1 << 20));
    assert_eq!(job("bs=(4*1024)").bs[0], BlockSizes::Fixed(4096));
}

#[test]
fn kib_is_decimal_under_default_kb_base() {
    // 1MiB = 1,000,000 bytes under kb_base=1024 (fio's quirk): not a multiple of 512,
    // so as a size it is fine but as a block size it is refused.
    let j = job("size=1MiB");
    assert_eq!(j.size, Some(SizeOrPercent::Bytes(1_000_000)));
    let j = job("size=1mi");
    assert_eq!(j.size, Some(SizeOrPercent::Bytes(1_048_576)));
    let j = job("kb_base=1000\nsize=1MiB");
    assert_eq!(j.size, Some(SizeOrPercent::Bytes(1_048_576)));
    let j = job("kb_base=1000\nsize=1m");
    assert_eq!(j.size, Some(SizeOrPercent::Bytes(1_000_000)));
}

#[test]
fn bsrange_and_bssplit() {
    assert_eq!(job("bsrange=4k-16k").bs[0], BlockSizes::Range { min: 4096, max: 16384 });
    assert_eq!(job("blocksize_range=16k:4k").bs[1], BlockSizes::Range { min: 4096, max: 16384 });
    let j = job("bssplit=4k/50:1k/:32k/");
    match &j.bs[0] {
        BlockSizes::Split(v) => {
            assert_eq!(v.len(), 3);
            assert!((v[1].1 - 25.0).abs() < 1e-9 && (v[2].1 - 25.0).abs() < 1e-9, "{v:?}");
        }
        other => panic!("{other:?}"),
    }
    let j = job("bssplit=4k/100,64k/100");
    assert_eq!(j.bs[1], BlockSizes::Split(vec![(65536, 100.0)]));
}

#[test]
fn depth_engine_and_batching() {
    let j = job("ioengine=io_uring\niodepth=32\niodepth_batch_submit=8");
    assert_eq!((j.engine_kind, j.iodepth, j.iodepth_batch_submit), (EngineKind::Async, 32, 8));
    assert_eq!(job("ioengine=libaio\niodepth=4\niodepth_batch=0").iodepth_batch_submit, 4);
    assert_eq!(job("ioengine=psync\niodepth=32").queue_depth(), 1, "sync engines are depth 1");
    assert_eq!(job("ioengine=libaio\niodepth=${DEPTH}").iodepth, 16);
    for e in ["sync", "psync", "vsync", "pvsync", "pvsync2"] {
        assert_eq!(job(&format!("ioengine={e}")).engine_kind, EngineKind::Sync);
    }
    for e in ["libaio", "io_uring", "posixaio", "null"] {
        assert_eq!(job(&format!("ioengine={e}")).engine_kind, EngineKind::Async);
    }
}

#[test]
fn direct_sync_fsync() {
    assert!(job("direct=1").direct);
    assert!(job("direct").direct);
    assert!(!job("buffered=1").direct);
    assert_eq!(job("sync=dsync").sync_mode, SyncMode::Dsync);
    assert_eq!(job("sync=1").sync_mode, SyncMode::Sync);
    assert_eq!(job("sync=none").sync_mode, SyncMode::None);
    assert!(job("sync=dsync").writes_fua());
    assert_eq!(job("fsync=8").fsync_every, 8);
    assert_eq!(job("fdatasync=1").fdatasync_every, 1);
    let sfr = |body| job(body).sync_file_range.map(|(flags, every)| (flags.0, every));
    assert_eq!(sfr("sync_file_range=wait_before,write:8"), Some((3, 8)), "fio's own example");
    assert_eq!(sfr("sync_file_range=write"), Some((SyncRange::WRITE, 1)), "every write by default");
    assert_eq!(sfr("sync_file_range=wait_after, write ,wait_before:2"), Some((7, 2)));
    assert!(job("sync_file_range=write,wait_before,wait_after").sync_file_range.unwrap().0.is_data_sync());
    // buffered I/O: direct I/O unless the simulated host has a page cache
    let f = parse("[job]\ndirect=0\n").unwrap();
    let w = f.simulation_warnings(false);
    assert!(w.iter().any(|w| w.contains("test.fio:2: buffered I/O is simulated as direct I/O for job 'job'")), "{w:?}");
    assert!(f.simulation_warnings(true).is_empty());
    assert!(f.real_device_warnings()[0].contains("runs as direct I/O for job 'job'"));
    assert!(parse("[job]\nrw=read\n").unwrap().simulation_warnings(false).is_empty(), "fio's default unwarned");
    // fio runs a time_based job without a runtime by its size
    let f = parse("[a]\nsize=1m\ntime_based\n").unwrap();
    assert!(!f.jobs[0].time_based);
    assert!(f.warnings.iter().any(|w| w.contains("time_based without a runtime is ignored")), "{:?}", f.warnings);
}

/// fio keeps its random map in blocks of the smallest size: a random job whose
/// blockalign differs from it runs without (norandommap), with a warning.
#[test]
fn blockalign_off_the_block_size_turns_the_random_map_off() {
    for (text, off) in [
        ("[job]\nrw=randread\nbs=4k\nblockalign=3k\n", true),
        ("[job]\nrw=randread\nbs=4k\nblockalign=4k\n", false),
        ("[job]\nrw=read\nbs=4k\nblockalign=3k\n", false),
    ] {
        let f = parse(text).unwrap();
        assert_eq!(f.jobs[0].norandommap, off, "{text}");
        assert_eq!(
            f.warnings.iter().any(|w| w.contains("test.fio:4: blockalign=3072")),
            off,
            "{text}: {:?}",
            f.warnings
        );
    }
}

#[test]
fn sizes_offsets_numjobs() {
    assert_eq!(job("offset_increment=4g").offset_increment, SizeOrPercent::Bytes(4 << 30));
    assert_eq!(job("offset_increment=25%").offset_increment, SizeOrPercent::Percent(25.0));
    let j = job("numjobs=4\nsize=20%\noffset=1g\nfilesize=2g\nio_size=512m");
    assert_eq!(j.numjobs, 4);
    assert_eq!(j.size, Some(SizeOrPercent::Percent(20.0)));
    assert_eq!(j.offset, SizeOrPercent::Bytes(1 << 30));
    assert_eq!(j.filesize, Some(FileSize { low: 2 << 30, high: 2 << 30 }));
    assert_eq!(j.io_size, Some(SizeOrPercent::Bytes(512 << 20)));
    assert_eq!(job("offset=50%").offset, SizeOrPercent::Percent(50.0));
    assert_eq!(job("io_size=50%").io_size, Some(SizeOrPercent::Percent(50.0)));
    assert!(parse("[job]\nio_size=200%\n").unwrap_err().to_string().contains("percentage in (0, 100]"));
    assert!(parse("[job]\noffset_increment=150%\n").unwrap_err().to_string().contains("percentage in (0, 100]"));
    assert_eq!(job("size=0x100000").size, Some(SizeOrPercent::Bytes(1 << 20)));
}

#[test]
fn times_and_their_default_units() {
    let j = job("runtime=30\ntime_based\nramp_time=2\nthinktime=2000");
    assert_eq!(j.runtime, Nanos::from_secs(30));
    assert!(j.time_based);
    assert_eq!(j.ramp_time, Nanos::from_secs(2));
    assert_eq!(j.thinktime, Nanos::from_ms(2), "thinktime is in microseconds");
    assert_eq!(job("runtime=2m").runtime, Nanos::from_secs(120), "m is minutes in a time");
    assert_eq!(job("runtime=500ms").runtime, Nanos::from_ms(500));
    assert_eq!(job("thinktime=2ms").thinktime, Nanos::from_ms(2));
    assert_eq!(job("").thinktime_blocks, 1, "fio's default");
    let j = job("thinktime_blocks=16\nnumber_ios=1000\nloops=3");
    assert_eq!((j.thinktime_blocks, j.number_ios, j.loops), (16, 1000, 3));
    assert_eq!(job("timeout=1h").runtime, Nanos::from_secs(3600));
    assert!(!job("time_based=0\nruntime=1").time_based);
    assert_eq!(job("startdelay=2").startdelay, Nanos::from_secs(2));
}

#[test]
fn rates() {
    let j = job("rate=1m,500k\nrate_process=poisson");
    assert_eq!(j.rate_bps, [1 << 20, 500 << 10, 500 << 10]);
    assert_eq!(j.rate_process, RateProcess::Poisson);
    assert_eq!(job("rate_iops=100,200").rate_iops, [100, 200, 200]);
    // fio 3.33 refuses rate and rate_iops together, even for different directions
    for both in ["rate=1m\nrate_iops=10", "rate=,1m\nrate_iops=10,"] {
        let e = parse(&format!("[job]\n{both}\n")).unwrap_err().to_string();
        assert!(e.contains("rate and rate_iops are mutually exclusive") && e.contains("rate_iops"), "{e}");
    }
    assert_eq!(job("rate_min=1m\nrate_iops=10").rate_iops[0], 10, "a minimum in bytes goes with rate_iops");
    assert_eq!(job("rate=,500k").rate_bps, [0, 500 << 10, 500 << 10]);
    assert_eq!(job("rate_process=linear").rate_process, RateProcess::Linear);
}

#[test]
fn priorities_nice_and_cgroups() {
    assert_eq!(job("prioclass=1\nprio=0").ioprio(), IoPrio::rt(0));
    assert_eq!(job("prioclass=1").ioprio(), IoPrio::rt(0));
    assert_eq!(job("prio=3").ioprio(), IoPrio::be(3), "a level without class is best-effort");
    assert_eq!(job("prioclass=3\nprio=7").ioprio(), IoPrio::new(PrioClass::Idle, 7));
    // fio's per-command priorities: a share of the I/Os at another priority
    let j = job("ioengine=io_uring\ncmdprio_percentage=30");
    assert_eq!(j.cmdprio(Op::Read), Some((30, IoPrio::rt(0))), "default: the highest class, level 0");
    assert_eq!(j.cmdprio(Op::Write), Some((30, IoPrio::rt(0))), "one value is for reads and writes");
    assert_eq!(j.ioprios(), vec![IoPrio::default(), IoPrio::rt(0)]);
    let j = job("ioengine=libaio\nprio=4\ncmdprio_percentage=0,50\ncmdprio_class=2\ncmdprio=1");
    assert_eq!(j.cmdprio(Op::Read), None);
    assert_eq!(j.cmdprio(Op::Write), Some((50, IoPrio::be(1))));
    assert_eq!(j.ioprios(), vec![IoPrio::be(4), IoPrio::be(1)]);
    assert_eq!(job("cmdprio_class=2").ioprios(), vec![IoPrio::default()], "no percentage, no effect");
    assert_eq!(job("nice=-20").nice, -20);
    assert_eq!(job("nice=19").nice, 19);
    let j = job("cgroup=tenant-a\ncgroup_weight=700");
    assert_eq!((j.cgroup.as_deref(), j.cgroup_weight), (Some("tenant-a"), 700));
}

#[test]
fn groups_and_reporting() {
    let f =
        parse("[global]\ngroup_reporting\n[a]\n[b]\nstonewall\n[c]\nnew_group\n[d]\nwait_for_previous=1\n").unwrap();
    assert!(f.jobs.iter().all(|j| j.group_reporting));
    assert_eq!(
        f.jobs.iter().map(|j| (j.stonewall, j.new_group)).collect::<Vec<_>>(),
        vec![(false, false), (true, false), (false, true), (true, false)]
    );
}

#[test]
fn percentiles_distributions_seeds() {
    assert_eq!(job("percentile_list=99.9:50:99").percentile_list, vec![50.0, 99.0, 99.9]);
    assert_eq!(job("random_distribution=random").distribution, Distribution::Uniform);
    assert_eq!(job("random_distribution=zipf:1.2").distribution, Distribution::Zipf { theta: 1.2, center: 0.0 });
    assert_eq!(job("random_distribution=pareto:0.9:0.5").distribution, Distribution::Pareto { h: 0.9, center: 0.5 });
    // without a value, fio 3.33's defaults (FIO_DEF_ZIPF, FIO_DEF_PARETO, a deviation of 0)
    assert_eq!(job("random_distribution=zipf").distribution, Distribution::Zipf { theta: 1.1, center: 0.0 });
    assert_eq!(job("random_distribution=pareto").distribution, Distribution::Pareto { h: 0.2, center: 0.0 });
    assert_eq!(job("random_distribution=normal").distribution, Distribution::Normal { dev_pct: 0.0, center: 0.5 });
    assert_eq!(job("random_distribution=normal:20").distribution, Distribution::Normal { dev_pct: 20.0, center: 0.5 });
    assert!(job("norandommap").norandommap);
    assert_eq!(job("randseed=1234").randseed, 1234);
    assert!(!job("randrepeat=0").randrepeat);
    assert!(!job("allrandrepeat=0").randrepeat);
}

#[test]
fn ioscheduler_is_one_per_device_and_errors_point_at_its_line() {
    let f = parse("[global]\nioscheduler=k2:bound=4\n[a]\n[b]\n").unwrap();
    let (spec, at) = f.ioscheduler().unwrap().unwrap();
    assert_eq!((spec.as_str(), at.to_string()), ("k2:bound=4", "test.fio:2".to_string()));
    assert_eq!(parse("[a]\n").unwrap().ioscheduler().unwrap(), None);
    let f = parse("[a]\nioscheduler=kyber\n[b]\nioscheduler=none\n").unwrap();
    let e = f.ioscheduler().unwrap_err().to_string();
    assert!(e.contains("test.fio:4: option 'ioscheduler'") && e.contains("one scheduler"), "{e}");
}

#[test]
fn precondition_is_one_state_per_file_and_errors_point_at_its_line() {
    assert_eq!(job("precondition=partial:0.5").precondition.as_deref(), Some("partial:0.5"));
    let f = parse("[global]\nprecondition=full\n[a]\n[b]\n").unwrap();
    assert_eq!(f.precondition().unwrap().as_deref(), Some("full"));
    let f = parse("[a]\nprecondition=full\n[b]\nprecondition=clean\n").unwrap();
    let e = f.precondition().unwrap_err().to_string();
    assert!(e.contains("test.fio:4: option 'precondition'") && e.contains("one state"), "{e}");
}

#[test]
fn globals_inherit_and_jobs_override() {
    let f = parse("[global]\nbs=8k\niodepth=4\nioengine=libaio\n[a]\n[b]\nbs=16k\n[global]\nrw=write\n[c]\n").unwrap();
    assert_eq!(f.jobs[0].bs[0], BlockSizes::Fixed(8192));
    assert_eq!(f.jobs[1].bs[0], BlockSizes::Fixed(16384));
    assert_eq!(f.jobs[0].pattern, Pattern::SeqRead, "a later [global] affects only later jobs");
    assert_eq!(f.jobs[2].pattern, Pattern::SeqWrite);
    assert_eq!(f.jobs[2].iodepth, 4, "globals accumulate");
    assert_eq!(f.global_options.len(), 4);
    assert_eq!(f.jobs[1].job_options, vec![("bs".to_string(), Some("16k".to_string()))]);
    // a bare flag is kept as written, without a value
    let f = parse("[a]\nnorandommap\nrw=randread\n").unwrap();
    assert_eq!(f.jobs[0].job_options[0], ("norandommap".to_string(), None));
}

/// fio's options for its own overhead and file layout parse, are checked, and change
/// nothing about the job.
#[test]
fn overhead_and_layout_options_are_accepted_without_effect() {
    let body = "gtod_reduce=1\ndisable_lat=1\ndisable_clat\ndisable_slat=1\ndisable_bw=1\nclocksource=cpu\n\
                fallocate=none\ncreate_serialize=0\nthread\nunlink=1\nrandom_generator=lfsr\n\
                overwrite=1\nallow_mounted_write=1\nsoftrandommap\nfile_service_type=roundrobin\n\
                pre_read=1\nlockmem=1m\niomem=shmhuge\nmem_align=512\ndisk_util=0\ncpus_allowed=0-3\n\
                cpumask=0xf\ncpus_allowed_policy=split\nnuma_mem_policy=local\nunit_base=8\nfixedbufs\nregisterfiles=1\n\
                gtod_cpu=0\nlog_entries=1024\nlog_compression=1m\ncreate_fsync=0\nunique_filename=1";
    let mut with = job(body);
    let without = job("");
    assert_eq!(with.job_options.len(), 32);
    assert!(with.thread, "thread only changes the normal output's 'Starting' line");
    with.thread = false;
    // overwrite says whether fio writes a new file out first, which the simulated drive
    // and page cache ask (their tests)
    assert!(with.overwrite && !job("").overwrite);
    assert!(job("rw=write\noverwrite=1").lays_out_data() && !job("rw=write").lays_out_data());
    assert!(job("rw=randrw").lays_out_data() && job("").lays_out_data(), "a job that reads (fio's default)");
    assert!(!job("rw=write\noverwrite=1\nfile_append=1\nsize=1m").lays_out_data(), "appends");
    assert!(!job("rw=trim\noverwrite=1").lays_out_data(), "trims are not writes");
    with.overwrite = false;
    // so does fallocate, through whether a file a job only allocates has its size
    // (the simulated layout's test)
    assert!(
        !with.fallocate_sizes_file && job("fallocate=truncate").fallocate_sizes_file && job("").fallocate_sizes_file
    );
    assert!(!job("fallocate=keep").fallocate_sizes_file && !job("fallocate=0").fallocate_sizes_file);
    with.fallocate_sizes_file = true;
    // unlink removes the job's files for the jobs after it (the engines' tests)
    assert!(with.unlink && !job("").unlink && !job("unlink=0").unlink);
    with.unlink = false;
    with.job_options.clear();
    with.option_lines.clear();
    let mut without = without;
    without.option_lines.clear();
    assert_eq!(format!("{with:?}"), format!("{without:?}"));
    // openfiles limits the files a job's I/O goes round (the driver's test)
    assert_eq!(job("openfiles=2").openfiles, 2);
    // invalidate does something on real devices: it is kept (on by default, as in fio)
    assert!(without.invalidate && !job("invalidate=0").invalidate);
    assert!(parse("[job]\nclocksource=tsc\n").unwrap_err().to_string().contains("'tsc' is not one of"));
    assert!(parse("[job]\ngtod_reduce=maybe\n").unwrap_err().to_string().contains("not a boolean"));
    assert!(job("unit_base=1").bandwidth_in_bits && !job("unit_base=8").bandwidth_in_bits);
    assert!(parse("[job]\nunit_base=2\n").unwrap_err().to_string().contains("'2' is not one of 0, 8, 1"));
    assert!(parse("[job]\niomem_align=8k\n").unwrap_err().to_string().contains("aligned to 4096"));
    assert!(parse("[job]\niomem=gpu\n").unwrap_err().to_string().contains("'gpu' is not one of"));
}

#[test]
fn buffer_options_and_what_they_imply() {
    let j = job("buffer_compress_percentage=40\nbuffer_compress_chunk=1k\ndedupe_percentage=10");
    assert_eq!(
        (j.buffers.compress_percentage, j.buffers.compress_chunk_bytes, j.buffers.dedupe_percentage),
        (40, 1024, 10)
    );
    assert!(j.buffers.refill && !j.buffers.scramble, "compression implies refill_buffers and no scrambling");
    let j = job("buffer_compress_percentage=40\nrefill_buffers=0");
    assert!(!j.buffers.refill, "an explicit refill_buffers wins");
    let j = job("buffer_pattern=0xdead\"ok\"");
    assert_eq!(j.buffers.pattern, vec![0xde, 0xad, b'o', b'k']);
    assert!(!j.buffers.scramble);
    assert_eq!(job("").buffers, nvsched_workload::BufferSpec::default());
    let e = parse("[job]\nbuffer_pattern=%o\n").unwrap_err().to_string();
    assert!(e.contains("test.fio:2") && e.contains("format specifiers"), "{e}");
    assert!(parse("[job]\ndedupe_percentage=101\n").is_err());
}

#[test]
fn offset_align_is_read() {
    assert_eq!(job("offset=10%\noffset_align=64k").offset_align, 65536);
}

#[test]
fn ignore_unsupported_turns_errors_into_warnings() {
    let text = "[a]\nverify_offset=64\nbogus_option=1\nbs=4k\n";
    assert!(parse(text).is_err());
    let f = parse_job_str(text, Path::new("test.fio"), &TestEnv, ParseOptions { ignore_unsupported: true }).unwrap();
    assert_eq!(f.warnings.len(), 2, "{:?}", f.warnings);
    assert!(f.warnings[0].contains("test.fio:2") && f.warnings[0].contains("does not support"));
}

/// Each bad input and a fragment its error must contain (file, line and option are
/// checked for every case too).
const BAD: &[(&str, &str)] = &[
    ("bs=abc", "'abc' is not a number"),
    ("bs=0", "must be greater than 0"),
    ("bs=1000", "must be a multiple of 512"),
    ("bs=4q", "unknown unit 'q'"),
    ("bs=4k,8k,16k,32k", "more than three"),
    ("bs=128m", "larger than 64 MiB"),
    ("bsrange=4k", "is not a range"),
    ("bsrange=4k-abc", "'abc' is not a number"),
    ("bssplit=4k/60:8k/60", "add up to 120"),
    ("bssplit=4k/abc", "'abc' in bssplit is not a percentage"),
    ("bssplit=4k/150", "out of range 0..=100"),
    ("rw=sideways", "is not a pattern; accepted: read"),
    ("rwmixread=101", "101 is out of range 0..=100"),
    ("rwmixwrite=-1", "-1 is out of range 0..=100"),
    ("iodepth=0", "0 is out of range 1..=65536"),
    ("iodepth=many", "'many' is not an integer"),
    ("iodepth_batch_submit=-2", "out of range 0..=65536"),
    ("ioengine=spdk", "'spdk' is not a supported engine"),
    ("direct=2", "'2' is not a boolean"),
    ("direct=yes", "'yes' is not a boolean"),
    ("sync=maybe", "'maybe' is not a sync mode"),
    ("fsync=-1", "-1 is out of range 0..="),
    ("sync_file_range=flush", "'flush' is not a sync_file_range flag; accepted: wait_before, write, wait_after"),
    ("sync_file_range=write:0", "0 is out of range 1..="),
    ("sync_file_range=write\nfsync=2", "set sync_file_range or fsync/fdatasync, not both"),
    ("numjobs=0", "0 is out of range 1..=4096"),
    ("size=abc", "'abc' is not a number"),
    ("size=0", "size must be greater than 0"),
    ("size=150%", "must be a percentage in (0, 100]"),
    ("offset=-1", "must not be negative"),
    ("filesize=0", "filesize must be greater than 0"),
    ("runtime=abc", "'abc' is not a time"),
    ("runtime=5x", "unknown time unit 'x'"),
    ("ramp_time=-1", "must not be negative"),
    ("thinktime=(2*", "expression ends early"),
    ("bs=((4)", "unbalanced parentheses"),
    ("time_based=yes", "'yes' is not a boolean"),
    ("rate=abc", "'abc' is not a number"),
    ("rate_iops=-5", "-5 is out of range 0..="),
    ("rate_process=uniform", "'uniform' is not a rate process"),
    ("thinktime_spin=20\nthinktime=10", "thinktime_spin (20us) is longer than thinktime (10us)"),
    ("wait_for=nobody", "waits for 'nobody', but no job has that name"),
    ("wait_for=job", "which comes after it"),
    ("verify=pattern", "verify=pattern needs a verify_pattern"),
    ("verify_interval=64", "64 is out of range (80 bytes or more"),
    ("verify_pattern=%o", "pattern format specifiers (such as %o, the offset) are not supported"),
    ("flow=1001", "1001 is out of range 0..=1000"),
    ("iodepth_low=-1", "-1 is out of range 0..="),
    ("percentage_random=50,101", "101 is out of range 0..=100"),
    ("prio=8", "8 is out of range 0..=7"),
    ("prioclass=4", "4 is out of range 0..=3"),
    ("nice=20", "20 is out of range -20..=19"),
    ("nice=-21", "-21 is out of range -20..=19"),
    ("cgroup_weight=50", "50 is out of range 100..=1000"),
    ("cgroup=", "cgroup name must not be empty"),
    // what a value was expanded from is named (an unset variable expands to nothing)
    ("filename=${DEV}", "filename must not be empty (expanded from '${DEV}')"),
    ("prio=${DEPTH}", "16 is out of range 0..=7 (expanded from '${DEPTH}')"),
    ("percentile_list=0", "percentile 0 is out of range (0, 100]"),
    ("percentile_list=50:101", "percentile 101 is out of range"),
    ("percentile_list=1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20:21", "21 percentiles given; at most 20"),
    ("random_distribution=zipf:1", "zipf theta 1 must be > 0 and not 1"),
    ("random_distribution=pareto:1.5", "pareto h 1.5 must be in (0, 1)"),
    ("random_distribution=normal:200", "normal deviation 200 must be in 0..=100"),
    ("random_distribution=sequence", "'sequence' distributions are not supported"),
    ("random_distribution=lumpy", "'lumpy' is not a distribution"),
    ("random_distribution=zipf:0.8:2", "center 2 is out of range"),
    ("randseed=abc", "'abc' is not an integer"),
    ("kb_base=999", "'999' is not a kb_base"),
    ("precondition=half", "'half' is not a drive state"),
    ("precondition=partial:2", "'partial:2' is not a drive state"),
    ("rw", "needs a value"),
    ("random_distribution=zoned:50/5:30/15", "add up to 80%, not 100%"),
    ("random_distribution=zoned:50/60:50/60", "sizes add up to 120%"),
    ("random_distribution=zoned:50/100:50/", "leave no rest"),
    ("rw=randread:0", "I/Os per offset"),
    ("rw=read:lots", "bytes to skip"),
    ("random_distribution=zoned:50/:50/50", "zone size '' is not a number"),
    ("random_distribution=zoned:50/5:50/95,100/100", "per-direction zoned"),
    ("random_distribution=zoned:50:50/95", "is not ACCESS%/SIZE"),
    ("random_distribution=zoned_abs:100/lots", "zone size"),
    ("blockalign=4k,8k", "different alignments per direction"),
    ("iodepht=4", "did you mean 'iodepth'"),
    ("verify_offset=64", "a fio option nvsched does not support"),
    ("fsync=1\nfdatasync=1", "set fsync or fdatasync, not both"),
    ("cmdprio_percentage=101", "out of range"),
    ("cmdprio_percentage=30,20,10", "more than two comma-separated values (read,write)"),
    ("cmdprio_class=0", "out of range"),
    ("cmdprio=8", "out of range"),
    ("cmdprio_percentage=30", "cmdprio_percentage needs ioengine=io_uring or libaio"),
    ("thinktime_blocks=0", "out of range"),
    ("thinktime_blocks_type=completed", "'completed' is not one of complete, issue"),
    ("loops=0", "out of range"),
    ("number_ios=-1", "out of range"),
];

#[test]
fn bad_inputs_give_precise_errors() {
    assert!(BAD.len() >= 30);
    for (body, expected) in BAD {
        let text = format!("[global]\n[job]\n{body}\n");
        let result = std::panic::catch_unwind(|| parse(&text));
        let err = match result {
            Ok(Err(e)) => e.to_string(),
            Ok(Ok(_)) => panic!("'{body}' was accepted"),
            Err(_) => panic!("'{body}' panicked"),
        };
        assert!(err.contains(expected), "'{body}': got '{err}', expected '{expected}'");
        assert!(err.starts_with("test.fio:"), "'{body}': error does not name the file: {err}");
        let key = body.split(['=', '\n']).next().unwrap();
        if !matches!(
            *body,
            "time_based" | "fsync=1\nfdatasync=1" | "sync_file_range=write\nfsync=2" | "cmdprio_percentage=30"
        ) {
            assert!(err.contains("test.fio:3:"), "'{body}': wrong line: {err}");
            assert!(err.contains(&format!("option '{key}'")), "'{body}': error does not name the option: {err}");
        } else {
            assert!(err.contains("test.fio:2:"), "'{body}': whole-job errors point at the section: {err}");
        }
    }
}

#[test]
fn structural_errors() {
    for (text, expected) in [
        ("bs=4k\n", "test.fio:1: option 'bs': option outside of a [] job section"),
        ("[global]\nbs=4k\n", "test.fio:1: the job file defines no jobs (only [global] sections)"),
        ("", "test.fio: the job file defines no jobs"),
        ("[job\n", "test.fio:1: section header '[job' has no closing ']'"),
        ("[job]\ninclude /nonexistent/x.fio\n", "test.fio:2: cannot read included file"),
    ] {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(expected), "{text:?}: {e}");
    }
}

/// A job file and a trace beside it in a fresh directory; returns the job file's path.
fn job_file_with_trace(job: &str, trace: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("nvsched-parser-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.trace"), trace).unwrap();
    let path = dir.join("j.fio");
    std::fs::write(&path, job).unwrap();
    path
}

fn parse_file(path: &Path) -> Result<JobFile, JobFileError> {
    parse_job_file(path, &TestEnv, ParseOptions::default())
}

#[test]
fn read_iolog_reads_the_trace_beside_the_job_file_once() {
    let path = job_file_with_trace(
        "[global]\nread_iolog=t.trace\nreplay_time_scale=50\n[a]\n[b]\nrw=randwrite\nreplay_skip=read\n",
        "0,8,4096,r,0.0\n1,0,8192,w,0.001\n",
    );
    let f = parse_file(&path).unwrap();
    let (a, b) = (&f.jobs[0], &f.jobs[1]);
    let t = a.trace().expect("loaded");
    assert!(std::sync::Arc::ptr_eq(t, b.trace().unwrap()), "read once for both jobs");
    assert_eq!((t.format, t.records.len(), t.devices.len()), (trace::TraceFormat::Spc, 2, 2));
    assert_eq!(a.replay.due_ns(1_000_000), 2_000_000, "replay_time_scale=50 is half the pace");
    assert_eq!(a.active_ops().collect::<Vec<_>>(), [Op::Read, Op::Write], "the trace decides the directions");
    assert_eq!(b.active_ops().collect::<Vec<_>>(), [Op::Write], "replay_skip=read");
    assert!(a.writes_data());
    assert_eq!((a.max_bs(), a.replay_bytes()), (8192, Some(2 << 20)));
    assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
    assert!(f.warnings[0].contains("j.fio:6: option 'rw' has no effect on job 'b': its trace (read_iolog) decides"));
}

#[test]
fn merge_options_alone_draw_a_warning() {
    let f = parse("[a]\nmerge_blktrace_file=m.bin\n").unwrap();
    assert!(f.warnings[0].contains(":2: option 'merge_blktrace_file' has no effect on job 'a' without read_iolog"));
    let path = job_file_with_trace("[a]\nread_iolog=t.trace\nmerge_blktrace_iters=2\n", "0 0 8 8 1\n");
    let f = parse_file(&path).unwrap();
    assert!(f.warnings[0]
        .contains("j.fio:3: option 'merge_blktrace_iters' has no effect on job 'a' without merge_blktrace_file"));
}

#[test]
fn replay_errors_name_the_job_file_line_and_the_trace_line() {
    let cases = [
        (
            "[a]\nread_iolog=t.trace\n",
            "0 0 8 8 1\n5 0 8 x 1\n",
            "j.fio:2: option 'read_iolog': ",
            "t.trace:2: size (sectors) 'x' is not a number",
        ),
        ("[a]\nread_iolog=nope.trace\n", "", "j.fio:2: option 'read_iolog': ", "nope.trace: cannot read trace"),
        (
            "[a]\nread_iolog=t.trace\ntrace_format=msr\n",
            "0 0 8 8 1\n",
            "option 'read_iolog': ",
            "t.trace:1: timestamp (100 ns) '0 0 8 8 1' is not a number",
        ),
        (
            "[a]\nread_iolog=t.trace\ntime_based=1\nruntime=5\n",
            "0 0 8 8 1\n",
            "j.fio:3: option 'time_based': ",
            "a replay ends with its trace",
        ),
        (
            "[a]\nread_iolog=t.trace\nloops=2\n",
            "0 0 8 8 1\n",
            "j.fio:3: option 'loops': ",
            "loops does not apply to a replay",
        ),
        (
            "[a]\nread_iolog=t.trace\nverify=crc32c\n",
            "0 0 8 8 1\n",
            "j.fio:3: option 'verify': ",
            "verify does not apply",
        ),
        (
            "[a]\ntrace_format=csv\n",
            "",
            "j.fio:2: option 'trace_format': ",
            "'csv' is not a trace format; accepted: auto, fio",
        ),
        ("[a]\nreplay_skip=reads\n", "", "j.fio:2: option 'replay_skip': ", "'reads' is not a direction"),
        ("[a]\nreplay_devices=one\n", "", "j.fio:2: option 'replay_devices': ", "'one' is neither split nor shared"),
        (
            "[a]\nmerge_blktrace_iters=1:0\n",
            "",
            "j.fio:2: option 'merge_blktrace_iters': ",
            "'0' is not 1 or more (one value per trace, separated by ':')",
        ),
        (
            "[a]\nreplay_align=1000\n",
            "",
            "j.fio:2: option 'replay_align': ",
            "'1000' is not a positive multiple of 512 bytes",
        ),
    ];
    for (job, trace, prefix, message) in cases {
        let e = parse_file(&job_file_with_trace(job, trace)).unwrap_err().to_string();
        assert!(e.contains(prefix) && e.contains(message), "{job}: {e}");
    }
}

#[test]
fn write_iolog_names_one_file_per_clone() {
    assert_eq!(job("write_iolog=w.log").write_iolog_path(0).as_deref(), Some("w.log"));
    let two = job("write_iolog=w.log\nnumjobs=2");
    assert_eq!((two.write_iolog_path(0), two.write_iolog_path(1)), (Some("w.log.0".into()), Some("w.log.1".into())));
    assert!(job("rw=read").write_iolog_path(0).is_none());
    let e = parse("[a]\nwrite_iolog=\n").unwrap_err().to_string();
    assert!(e.contains("test.fio:2: option 'write_iolog': write_iolog needs a file name"), "{e}");
}

#[test]
fn replay_scale_align_and_redirect_as_in_fio() {
    let path = job_file_with_trace(
        "[a]\nread_iolog=t.trace\nreplay_scale=2\nreplay_align=4k\nreplay_redirect=/dev/nvme0n1\n",
        "0 0 20480 8 1\n1 3 8001 8 1\n",
    );
    let f = parse_file(&path).unwrap();
    let a = &f.jobs[0];
    let offsets: Vec<u64> = a.trace().unwrap().records.iter().map(|r| r.offset_bytes).collect();
    // 10 MiB / 2 = 5 MiB; 4,096,512 / 2 = 2,048,256, down to 4 KiB: 2,048,000
    assert_eq!(offsets, [5 << 20, 2_048_000]);
    assert_eq!(a.trace().unwrap().lowest_bytes, [5 << 20, 1 << 20]);
    assert_eq!((a.filename.as_deref(), a.replay.devices), (Some("/dev/nvme0n1"), trace::DeviceMapping::Shared));
}

#[test]
fn other_verify_checksums_are_checked_with_crc32c_and_say_so() {
    let f = parse("[job]\nverify=md5\n").unwrap();
    assert!(f.jobs[0].verify);
    assert!(
        f.warnings.iter().any(|w| w.contains("test.fio:2") && w.contains("checked with crc32c")),
        "{:?}",
        f.warnings
    );
    assert!(parse("[job]\nverify=crc32c\n").unwrap().warnings.is_empty());
    let e = parse("[job]\nverify=pattern\n").unwrap_err().to_string();
    assert!(e.contains("needs a verify_pattern"), "{e}");
}

#[test]
fn a_cgroup_path_is_normalised_and_its_ancestors_become_tenants_first() {
    let f = parse("[global]\ncgroup=/outer//inner/\n[a]\ncgroup_weight=300\n[b]\ncgroup=outer\ncgroup_weight=200\n[c]\ncgroup=/\n");
    let e = f.unwrap_err().to_string();
    assert!(e.contains("test.fio:9") && e.contains("cgroup name must not be empty"), "{e}");
    let f = parse("[global]\ncgroup=/outer//inner/\n[a]\ncgroup_weight=300\n[b]\ncgroup=outer\ncgroup_weight=200\n")
        .unwrap();
    assert_eq!(f.jobs[0].cgroup.as_deref(), Some("outer/inner"));
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    let tree = nvsched_workload::tenant_tree(&f.jobs);
    let nodes: Vec<(u32, &str, u32, u32)> =
        tree.cgroups().map(|(t, n)| (t, n.name.as_str(), n.parent, n.weight)).collect();
    assert_eq!(nodes, [(1, "outer", 0, 200), (2, "outer/inner", 1, 300)]);
    let names: Vec<&str> = tree.cgroups().map(|(_, n)| n.name.as_str()).collect();
    assert_eq!(names, ["outer", "outer/inner"]);
}

#[test]
fn a_cgroup_takes_the_first_io_latency_target_given() {
    let f = parse("[a]\ncgroup=db\ncgroup_io_latency=150\n[b]\ncgroup=db\ncgroup_io_latency=1ms\n[c]\ncgroup=web/app\ncgroup_io_latency=2ms\n")
        .unwrap();
    assert_eq!(f.jobs[0].cgroup_io_latency, Some(Nanos::from_us(150)), "microseconds without a unit");
    let tree = nvsched_workload::tenant_tree(&f.jobs);
    let targets: Vec<Option<Nanos>> = tree.cgroups().map(|(t, _)| tree.latency_target(t)).collect();
    assert_eq!(targets, [Some(Nanos::from_us(150)), None, Some(Nanos::from_ms(2))], "db, web, web/app");
    for (text, line, expected) in [
        ("[a]\nrw=read\ncgroup_io_latency=1ms\n", 3, "needs the job's cgroup (cgroup=NAME)"),
        ("[a]\ncgroup=db\ncgroup_io_latency=0\n", 3, "the target must be above 0"),
        ("[a]\ncgroup=db\ncgroup_io_latency=fast\n", 3, "option 'cgroup_io_latency'"),
    ] {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(&format!("test.fio:{line}")) && e.contains(expected), "{text}: {e}");
    }
}

#[test]
fn filename_format_names_each_clones_file_as_fio_does() {
    // fio 3.33 names these fmt.myjob.n0.f0.x and fmt.myjob.n1.f0.x
    let f = parse("[myjob]\nnumjobs=2\nfilename_format=fmt.$jobname.n$jobnum.f$filenum.x\n").unwrap();
    let names: Vec<String> = (0..2).map(|c| f.jobs[0].file_name(c)).collect();
    assert_eq!(names, ["fmt.myjob.n0.f0.x", "fmt.myjob.n1.f0.x"]);
    let f = parse("[myjob]\nfilename=given\nfilename_format=$jobname.x\n").unwrap();
    assert_eq!(f.jobs[0].file_name(0), "given", "filename wins");
    let e = parse("[j]\nbs=$jobsize\n").unwrap_err().to_string();
    assert!(e.contains("option 'bs'") && e.contains("$jobsize"), "{e}");
}

#[test]
fn every_fio_option_is_taken_or_refused_with_a_reason() {
    let list = include_str!("data/fio-3.33-options.txt");
    let names: Vec<&str> = list.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect();
    assert!(names.len() > 200, "{}", names.len());
    let unknown: Vec<&str> =
        names.iter().copied().filter(|n| find_option(n).is_none() && spec::unsupported_reason(n).is_none()).collect();
    assert!(unknown.is_empty(), "fio options nvsched calls unknown: {unknown:?}");
    // a refusal says why
    let e = parse("[a]\natomic=1\n").unwrap_err().to_string();
    assert!(e.contains("does not support: atomic writes are not modelled"), "{e}");
}

#[test]
fn options_accepted_without_effect_check_their_values() {
    for ok in ["error_dump=0", "verify_async=4", "lockfile=none", "fadvise_hint=sequential", "log_store_compressed=0"] {
        assert!(parse(&format!("[a]\n{ok}\n")).is_ok(), "{ok}");
    }
    for (bad, why) in [
        ("lockfile=rw", "not one of none, exclusive, readwrite"),
        ("log_store_compressed=1", "compressed logs are not supported"),
        ("fadvise_hint=often", "not one of"),
        ("rw_sequencer=backwards", "not one of sequential, identical"),
    ] {
        let e = parse(&format!("[a]\n{bad}\n")).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn hooks_are_read_and_simulation_says_it_skips_them() {
    let f = parse("[a]\nexec_prerun=echo $HOME\nexec_postrun=true\nverify_fatal=1\nallow_file_create=0\n").unwrap();
    let j = &f.jobs[0];
    assert_eq!(j.exec_prerun.as_deref(), Some("echo $HOME"));
    assert!(j.verify_fatal && !j.allow_file_create);
    let w = f.simulation_warnings(false);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("test.fio:2") && w[0].contains("exec_prerun of job 'a' is not run in simulation"), "{w:?}");
    assert!(parse("[a]\nrw=read\n").unwrap().simulation_warnings(false).is_empty());
}

#[test]
fn sqthread_poll_needs_io_uring_and_simulation_says_it_changes_nothing() {
    let f = parse("[a]\nioengine=io_uring\nsqthread_poll=1\nsqthread_poll_cpu=1\n").unwrap();
    assert!(f.jobs[0].sqthread_poll && f.jobs[0].sqthread_poll_cpu == Some(1));
    assert!(f.simulation_warnings(false)[0].contains("sqthread_poll of job 'a' has no effect in simulation"));
    let e = parse("[a]\nioengine=libaio\nsqthread_poll=1\n").unwrap_err().to_string();
    assert!(e.contains("sqthread_poll needs ioengine=io_uring"), "{e}");
}

/// `filesize=LO-HI` draws each file's size in the range, a multiple of the smallest block
/// (fio's get_rand_file_size), the same in every run of the job.
#[test]
fn a_filesize_range_draws_each_file_size() {
    let j = job("nrfiles=16\nbs=4k\nfilesize=64k-16k");
    assert_eq!(j.filesize, Some(FileSize { low: 16 << 10, high: 64 << 10 }));
    let sizes: Vec<u64> = (0..16).map(|f| j.needed_file_bytes(0, f, None).unwrap()).collect();
    assert!(sizes.iter().all(|&s| (16 << 10..=64 << 10).contains(&s) && s % 4096 == 0), "{sizes:?}");
    assert!(sizes.iter().any(|&s| s != sizes[0]), "the sizes are drawn per file: {sizes:?}");
    let again: Vec<u64> = (0..16).map(|f| j.needed_file_bytes(0, f, None).unwrap()).collect();
    assert_eq!(sizes, again);
    let other = job("nrfiles=16\nbs=4k\nfilesize=16k-64k\nrandseed=7");
    assert_ne!(sizes, (0..16).map(|f| other.needed_file_bytes(0, f, None).unwrap()).collect::<Vec<_>>());
    // a region spans the file from the offset: size only counts the job's bytes
    let r = j.clone_region(0, 3, "x", sizes[3]).unwrap();
    assert_eq!((r.start, r.len), (0, sizes[3]));
    let fixed = job("size=1m\nfilesize=256k\noffset=64k");
    assert_eq!(fixed.clone_region(0, 0, "x", 256 << 10).unwrap().len, 192 << 10);
    // a file already outside the range is taken at the job's own size, as fio resizes it
    assert_eq!(fixed.clone_region(0, 0, "x", 1 << 20).unwrap().len, 192 << 10);
    assert!(parse("[j]\nfilesize=0-4k\n").unwrap_err().to_string().contains("filesize must be greater than 0"));
    // a percentage size is of the whole file, at most what lies after the offset, in
    // whole blocks (fio 3.33: 32, 32 and 8 blocks of 4 KiB)
    let pct = |text: &str| job(text).clone_region(0, 0, "x", 256 << 10).unwrap().len >> 10;
    assert_eq!(pct("bs=4k\nsize=50%\nfilesize=256k\noffset=64k"), 128);
    assert_eq!(pct("bs=4k\nsize=75%\nfilesize=256k\noffset=128k"), 128);
    assert_eq!(pct("bs=12k\nsize=25%\nfilesize=256k\noffset=16k"), 60);
    // and fio lays a new file out only as far as that reaches (196,608 bytes in fio 3.33)
    assert_eq!(job("bs=4k\nsize=75%\nfilesize=256k").needed_file_bytes(0, 0, None), Some(192 << 10));
    assert_eq!(job("bs=4k\nsize=50%\nfilesize=256k\noffset=64k").needed_file_bytes(0, 0, None), Some(192 << 10));
}

/// fio makes a job's copies counting down: its threads are clones 0, N-1, ..., 1.
#[test]
fn clones_come_in_fios_order_of_threads() {
    assert_eq!(job("numjobs=1").clones_in_fio_order().collect::<Vec<_>>(), [0]);
    let j = job("numjobs=4\nnrfiles=2");
    assert_eq!(j.clones_in_fio_order().collect::<Vec<_>>(), [0, 3, 2, 1]);
    assert_eq!((0..4).map(|c| j.fio_thread_position(c)).collect::<Vec<_>>(), [0, 3, 2, 1]);
    let files: Vec<(u32, u32)> = j.clone_files_in_fio_order().collect();
    assert_eq!(files[..4], [(0, 0), (0, 1), (3, 0), (3, 1)]);
}

/// `verify=null` is taken, as fio's pretend verify, without the crc32c warning.
#[test]
fn verify_null_pretends() {
    let f = parse("[a]\nsize=1m\nrw=write\nverify=null\n").unwrap();
    assert!(f.jobs[0].verify && f.jobs[0].verify_format.pretend && f.warnings.is_empty(), "{:?}", f.warnings);
    assert!(!parse("[a]\nsize=1m\nverify=md5\n").unwrap().jobs[0].verify_format.pretend);
}

/// fio 3.33's deprecated options: `verifysort`, `verifysort_nr` and `flow_watermark` are
/// ignored with a warning (and kept in the job's options, as fio's JSON keeps them);
/// `rwmixcycle` and `percentage_sequential` are refused, as fio refuses them.
#[test]
fn deprecated_fio_options_are_ignored_or_refused_as_fio_does() {
    let f = parse("[a]\nsize=1m\nverifysort=1\nflow_watermark=8\n").unwrap();
    assert_eq!(f.warnings.len(), 2, "{:?}", f.warnings);
    assert!(f.warnings[0].contains("test.fio:3: option 'verifysort' is deprecated and has no effect"));
    assert!(f.jobs[0].job_options.iter().any(|(k, _)| k == "flow_watermark"));
    let e = parse("[a]\nsize=1m\npercentage_sequential=50\n").unwrap_err().to_string();
    assert!(
        e.contains("test.fio:3") && e.contains("fio 3.33 refuses it too") && e.contains("percentage_random"),
        "{e}"
    );
    assert!(parse("[a]\nrwmixcycle=40\n").unwrap_err().to_string().contains("'rwmixcycle' is deprecated"));
    // what `nvsched options NAME` says of them
    assert!(spec::why_not_an_option("verifysort").contains("deprecated and has no effect"));
}

/// A negative `flow` (older fio's signed counter, still in fio's butterfly example) is
/// taken as fio 3.33 takes it: an unsigned weight near 2^32, summed per flow group modulo
/// 2^32; a warning says what that makes of the group.
#[test]
fn a_negative_flow_is_an_unsigned_weight_as_in_fio() {
    let f = parse("[global]\nbs=4k\nsize=1m\n[fwd]\nrw=read\nflow=2\n[back]\nrw=read:-8k\nflow=-2\n").unwrap();
    assert_eq!(f.jobs[1].flow, u32::MAX - 1);
    assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
    let w = &f.warnings[0];
    assert!(w.contains("test.fio:9: flow=-2") && w.contains("weight 4294967294"), "{w}");
    assert!(w.contains("add up to 0, so flow control is off"), "{w}");
    let f = parse("[a]\nsize=1m\nflow=-2\n[b]\nsize=1m\nflow=3\n[c]\nsize=1m\nflow=-5\nflow_id=1\n[d]\nsize=1m\nflow=5\nflow_id=1\n").unwrap();
    assert!(f.warnings[0].contains("add up to 1, no more than its own weight"), "{:?}", f.warnings);
    assert!(f.warnings[1].contains("flow_id 1") && f.warnings[1].contains("add up to 0"), "{:?}", f.warnings);
    assert!(parse("[a]\nflow=2\nsize=1m\n").unwrap().warnings.is_empty());
}

/// `lockfile`: a mode per job; with an asynchronous engine it cannot make a job wait, and
/// a warning says so.
#[test]
fn lockfile_takes_fio_modes_and_warns_where_it_cannot_act() {
    let f = parse("[global]\nlockfile=readwrite\nsize=1m\n[a]\n[b]\nlockfile=exclusive\n[c]\nlockfile=none\n").unwrap();
    let modes: Vec<LockMode> = f.jobs.iter().map(|j| j.lockfile).collect();
    assert_eq!(modes, [LockMode::ReadWrite, LockMode::Exclusive, LockMode::None]);
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    let f = parse("[a]\nsize=1m\nioengine=libaio\nlockfile=exclusive\n[b]\nsize=1m\nioengine=libaio\n").unwrap();
    assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
    let w = &f.warnings[0];
    assert!(
        w.contains("test.fio:4: lockfile=exclusive has no effect on job 'a'") && w.contains("ioengine=libaio"),
        "{w}"
    );
}

/// `file_append`: each regular file's region is `size` bytes from where the file ended,
/// whatever `offset` says (fio's get_start_offset); a block device's is as without it;
/// the job must say how much to append.
#[test]
fn file_append_starts_at_the_end_of_the_file() {
    let j = job("size=32k\noffset=16k\nbs=4k\nfile_append=1\nnrfiles=2");
    assert!(j.file_append);
    assert_eq!(j.needed_file_bytes(0, 1, None), Some(16 << 10), "the file's end is added by the caller");
    let r = j.region_in(0, 1, "x", true, 64 << 10, 80 << 10).unwrap();
    assert_eq!((r.start, r.len), (64 << 10, 16 << 10));
    let r = j.region_in(0, 1, "/dev/x", false, 0, 1 << 20).unwrap();
    assert_eq!((r.start, r.len), (16 << 10, 16 << 10), "a block device works from the offset");
    let full = j.region_in(0, 0, "x", true, 64 << 10, 64 << 10).unwrap_err();
    assert!(full.contains("no room after the end of 'x'"), "{full}");
    for (body, why) in [
        ("file_append=1\n", "needs size= in bytes"),
        ("file_append=1\nsize=50%\n", "needs size= in bytes"),
        ("file_append=1\nsize=1m\nfilesize=1m\n", "filesize= sizes the whole file"),
        ("file_append=1\nsize=1m\nfill_device=1\n", "fill_device already writes"),
    ] {
        let e = parse(&format!("[a]\n{body}")).unwrap_err().to_string();
        assert!(e.contains(why) && e.contains("test.fio:2: option 'file_append'"), "{body}: {e}");
    }
}

#[test]
fn several_files_per_job_are_named_sized_and_checked() {
    let f = parse("[j]\nnrfiles=3\nsize=3m\nnumjobs=2\nfilename_format=$jobname.$jobnum.$filenum.dat\n").unwrap();
    let j = &f.jobs[0];
    assert_eq!(j.files_per_clone(), 3);
    assert_eq!(j.file_name_of(1, 2), "j.1.2.dat");
    assert_eq!(j.needed_file_bytes(0, 2, None), Some(1 << 20), "size is divided among the files");
    let f = parse("[j]\nfilename=a:b\\:c:d\nsize=2m\nfile_service_type=random:4\n").unwrap();
    let j = &f.jobs[0];
    assert_eq!(((0..3).map(|k| j.file_name_of(0, k)).collect::<Vec<_>>()), ["a", "b:c", "d"]);
    assert_eq!(j.file_service, FileService::Random(4));
    // zipf, pareto and normal (gauss) take random_distribution's values and defaults
    let skewed = |v: &str| job(&format!("nrfiles=2\nsize=2m\nfile_service_type={v}")).file_service;
    assert_eq!(skewed("zipf:1.2"), FileService::Skewed(Distribution::Zipf { theta: 1.2, center: 0.0 }));
    assert_eq!(skewed("gauss"), FileService::Skewed(Distribution::Normal { dev_pct: 0.0, center: 0.5 }));
    let e = parse("[j]\nfile_service_type=zipf:1\n").unwrap_err().to_string();
    assert!(e.contains("zipf theta 1 must be > 0 and not 1"), "{e}");
    for (bad, why) in [
        ("nrfiles=2\nrw=trimwrite", "rw is not supported with several files per job (nrfiles)"),
        ("filename=a:b\nread_iolog=x", "read_iolog is not supported with several files per job (filename)"),
        (
            "file_service_type=lumpy",
            "'lumpy' is not one of roundrobin, sequential, random, zipf, pareto, normal, gauss",
        ),
        ("file_service_type=sequential:2", "sequential takes no ':N'"),
    ] {
        let e = parse(&format!("[j]\nsize=1m\n{bad}\n")).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn serialize_overlap_applies_where_fio_applies_it() {
    let on = |text: &str| parse(text).unwrap().jobs[0].serialize_overlap;
    assert!(on("[a]\nioengine=io_uring\niodepth=4\nrw=randwrite\nserialize_overlap=1\n"));
    assert!(on("[a]\nioengine=libaio\niodepth=4\nrw=randtrim\nserialise_overlap=1\n"));
    // nothing changes data, or one I/O is out at a time: nothing to serialise
    assert!(!on("[a]\nioengine=io_uring\niodepth=4\nrw=randread\nserialize_overlap=1\n"));
    assert!(!on("[a]\nioengine=io_uring\niodepth=1\nrw=randwrite\nserialize_overlap=1\n"));
    assert!(!on("[a]\nioengine=psync\niodepth=4\nrw=randwrite\nserialize_overlap=1\n"));
    assert!(!on("[a]\nioengine=io_uring\niodepth=4\nrw=randwrite\n"));
}

#[test]
fn verify_backlog_and_its_batch_are_read() {
    let f = parse("[a]\nrw=randwrite\nverify=crc32c\nverify_backlog=32\nverify_backlog_batch=8\n").unwrap();
    assert_eq!((f.jobs[0].verify_backlog, f.jobs[0].verify_backlog_batch), (32, 8));
    let e = parse("[a]\nverify_backlog=-1\n").unwrap_err().to_string();
    assert!(e.contains("verify_backlog"), "{e}");
}

/// fio 3.33 warns when a job's clones write and verify one file (not when each has its
/// own, or they only read, or do not verify).
#[test]
fn clones_verifying_one_file_are_warned_of() {
    let warned = |opts: &str| {
        let f = parse(&format!("[a]\nsize=64k\nnumjobs=2\n{opts}\n")).unwrap();
        f.warnings.iter().any(|w| w.contains("test.fio:3: numjobs=2 clones write and verify the same file"))
    };
    assert!(warned("filename=/tmp/x.dat\nrw=randwrite\nverify=crc32c"));
    assert!(warned("filename=/tmp/x.dat\nrw=randrw\nverify=crc32c"));
    assert!(!warned("filename=/tmp/x.dat\nrw=read\nverify=crc32c"));
    assert!(!warned("filename=/tmp/x.dat\nrw=write"));
    assert!(!warned("directory=/tmp\nrw=write\nverify=crc32c"));
}

/// fio notes that a synchronous engine caps `iodepth` at 1, and reports the depth as given.
#[test]
fn a_sync_engine_caps_iodepth_and_says_so() {
    let f = parse("[global]\niodepth=8\n[a]\nioengine=psync\n[b]\nioengine=libaio\n").unwrap();
    assert_eq!((f.jobs[0].iodepth, f.jobs[0].queue_depth()), (8, 1));
    assert_eq!((f.jobs[1].iodepth, f.jobs[1].queue_depth()), (8, 8));
    assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
    assert!(f.warnings[0].contains("test.fio:2: iodepth=8 with the synchronous engine psync"), "{:?}", f.warnings);
    assert!(parse("[a]\nioengine=psync\n").unwrap().warnings.is_empty());
}

/// A percentile list's entries show as many decimals as the most precise was written
/// with (fio's percentile_precision); the default list shows two.
#[test]
fn percentile_precision_follows_the_list_as_written() {
    let precision = |line: &str| job(line).percentile_precision;
    assert_eq!(precision(""), 2);
    assert_eq!(precision("percentile_list=50:99"), 0);
    assert_eq!(precision("percentile_list=99.5:1"), 1);
    assert_eq!(precision("percentile_list=99.999:50"), 3);
    assert_eq!(job("percentile_list=99.999:50").percentile_list, vec![50.0, 99.999], "sorted, as fio does");
}

#[test]
fn opendir_adds_every_regular_file_below_the_directory() {
    let dir = std::env::temp_dir().join(format!("nvsched-opendir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    for name in ["b", "a", "sub/c", "sub/deeper/d"] {
        std::fs::write(dir.join(name), b"x").unwrap();
    }
    std::os::unix::fs::symlink(dir.join("a"), dir.join("link")).unwrap();
    let d = dir.display();
    let j = job(&format!("opendir={d}\nsize=1m"));
    let names: Vec<String> = (0..j.files_per_clone()).map(|k| j.file_name_of(0, k)).collect();
    let expected: Vec<String> = ["a", "b", "sub/c", "sub/deeper/d"].iter().map(|n| format!("{d}/{n}")).collect();
    assert_eq!(names, expected, "in path order, the link left out");
    // before the files filename names, as fio 3.33 takes them (its iolog: the directory's
    // files, then filename's, round robin)
    let j = job(&format!("filename=/tmp/first\nopendir={d}\nsize=1m"));
    assert_eq!((j.file_name_of(0, 4).as_str(), j.files_per_clone()), ("/tmp/first", 5));
    assert_eq!(j.file_name_of(0, 0), format!("{d}/a"));

    let e = parse(&format!("[a]\nopendir={d}/none\n")).unwrap_err().to_string();
    assert!(e.contains("test.fio:2: option 'opendir': cannot read directory"), "{e}");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let e = parse(&format!("[a]\nopendir={d}/empty\n")).unwrap_err().to_string();
    assert!(e.contains("holds no regular files"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--job-set KEY=VALUE` sets an option in every job after the file's own, so it wins over
/// `[global]` and the job's value; `${VAR}`s expand; errors name the flag and the option.
#[test]
fn command_line_options_are_set_in_every_job_last() {
    let text = "[global]\nsize=100g\niodepth=4\n[a]\niodepth=8\n[b]\nsize=2g\n";
    let set = |options: &[&str]| {
        let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        let every = command_line_options("--job-set", &options, &TestEnv)?;
        parse_job_str_with(text, Path::new("test.fio"), &TestEnv, ParseOptions::default(), &every)
    };
    let jobs = set(&["size=1g", "iodepth=${DEPTH}"]).unwrap();
    assert_eq!(jobs.jobs.len(), 2);
    for j in &jobs.jobs {
        assert_eq!(j.size, Some(SizeOrPercent::Bytes(1 << 30)), "{}", j.name);
        assert_eq!(j.iodepth, 16, "{}", j.name);
        assert_eq!(j.job_options.last(), Some(&("iodepth".to_string(), Some("16".to_string()))));
    }
    assert_eq!(set(&[]).unwrap(), parse(text).unwrap(), "nothing set: the file as it is");
    for (options, expected) in [
        (vec!["size=lots"], "--job-set size=lots: option 'size': "),
        (vec!["iodepth=1", "nosuch=1"], "--job-set nosuch=1: option 'nosuch': "),
        (vec!["[x]"], "--job-set [x]: expected one job option, KEY=VALUE"),
        (vec!["size=1g;rw=write"], "--job-set size=1g;rw=write: expected one job option"),
        (vec!["a b=1"], "--job-set a b=1: 'a b=1' is not an option line"),
        (vec![""], "--job-set : expected one job option"),
    ] {
        let err = set(&options).unwrap_err().to_string();
        assert!(err.starts_with(expected), "{options:?}: {err}");
    }
}
