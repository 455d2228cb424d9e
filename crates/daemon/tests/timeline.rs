//! `filprove timeline`: logs written by the real tracing formatters (text, text with
//! colours, JSON) from a scenario with known intervals; the utilisations, gaps, stage
//! times, NVML means and the picture's structure computed from each; garbage skipped and
//! counted; the command end to end.

use std::io::Write;
use std::sync::{Arc, Mutex};

use filprove::timeline::{self, analyze::Report};
use filprove_engine::gpu_sampler::{self, GpuSample};

/// Base time: 2026-11-30T03:40:00Z, µs.
const T0: u64 = 1_796_010_000_000_000;

fn us(s: f64) -> u64 {
    T0 + (s * 1e6).round() as u64
}

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buf {
    type Writer = Buf;
    fn make_writer(&'a self) -> Buf {
        self.clone()
    }
}

const DEV0: &str = "cuda:0 NVIDIA H200";
const DEV1: &str = "cuda:1 NVIDIA H200";

fn cpu_ev(ev: &str, job: &str, partition: u64, t: f64) {
    tracing::info!(target: "filprove::timeline", ev, job, partition, t_us = us(t), "timeline");
}

fn gpu_ev(ev: &str, job: &str, partition: u64, device: &str, worker: u64, t: f64) {
    tracing::info!(
        target: "filprove::timeline",
        ev, job, partition, device = %device, worker, t_us = us(t), "timeline"
    );
}

/// (job, partition, device, worker, synth [a, b], stage [a, b], lock_wait, acquired,
/// gpu [a, b], released)
type Part = (
    &'static str,
    u64,
    &'static str,
    u64,
    [f64; 2],
    Option<[f64; 2]>,
    f64,
    f64,
    [f64; 2],
    f64,
);

const PARTS: [Part; 5] = [
    (
        "j1",
        0,
        DEV0,
        0,
        [0.0, 1.0],
        Some([1.0, 1.2]),
        1.2,
        1.2,
        [1.25, 2.95],
        3.0,
    ),
    (
        "j1",
        1,
        DEV0,
        1,
        [0.0, 1.5],
        Some([1.5, 1.8]),
        1.8,
        3.0,
        [3.05, 4.95],
        5.0,
    ),
    (
        "j1",
        2,
        DEV0,
        0,
        [1.0, 2.5],
        Some([3.0, 3.5]),
        3.5,
        6.0,
        [6.0, 8.0],
        8.0,
    ),
    (
        "j2",
        0,
        DEV0,
        1,
        [2.0, 3.0],
        Some([5.0, 5.5]),
        5.5,
        8.5,
        [8.5, 9.5],
        9.5,
    ),
    // No pre-staging (e.g. the CPU backend or the in-lock upload path).
    (
        "j2",
        1,
        DEV1,
        0,
        [2.0, 3.0],
        None,
        3.0,
        3.0,
        [3.0, 7.0],
        7.0,
    ),
];

/// cuda:0's merged kernel regions.
const KERNEL0: [[f64; 2]; 3] = [[1.2, 5.0], [6.0, 8.0], [8.5, 9.5]];

fn in_kernel0(t: f64) -> bool {
    KERNEL0.iter().any(|k| k[0] <= t && t <= k[1])
}

/// The whole run, logged through whatever subscriber is current.
fn scenario() {
    tracing::info!(target: "filprove::server", addr = "127.0.0.1:9821", "listening");
    for (job, p, dev, w, synth, stage, wait, acq, gpu, rel) in PARTS {
        cpu_ev("synth_start", job, p, synth[0]);
        cpu_ev("synth_end", job, p, synth[1]);
        if let Some(s) = stage {
            gpu_ev("stage_start", job, p, dev, w, s[0]);
            gpu_ev("stage_end", job, p, dev, w, s[1]);
        }
        gpu_ev("lock_wait", job, p, dev, w, wait);
        gpu_ev("lock_acquired", job, p, dev, w, acq);
        gpu_ev("gpu_start", job, p, dev, w, gpu[0]);
        gpu_ev("gpu_end", job, p, dev, w, gpu[1]);
        gpu_ev("lock_released", job, p, dev, w, rel);
        gpu_ev("partition_done", job, p, dev, w, rel);
    }
    // A job proved twice: its first attempt's partition never reached a GPU.
    cpu_ev("synth_start", "j3", 0, 0.5);
    cpu_ev("synth_end", "j3", 0, 0.9);
    cpu_ev("synth_start", "j3", 0, 9.0);
    cpu_ev("synth_end", "j3", 0, 9.2);
    tracing::info!(
        target: "filprove::timeline",
        job = "j1", partition = 0u64, device = DEV0, worker = 0u64,
        prove_ms = 1700u64, msm_g1_ms = 900u64, h2d_bytes = 123_456u64,
        slot_wait_ms = 50.0, stage_copy_ms = 150.0, "partition"
    );
    tracing::info!(
        target: "filprove::timeline",
        job = "j1", partition = 2u64, device = DEV0, worker = 0u64,
        slot_wait_ms = 350.0, stage_copy_ms = 150.0, "partition"
    );
    // A partition uploaded inside its region (no staging events): its summary's staging
    // fields are not a staging.
    tracing::info!(
        target: "filprove::timeline",
        job = "j2", partition = 1u64, device = DEV1, worker = 0u64,
        slot_wait_ms = 0.0, stage_copy_ms = 0.0, "partition"
    );
    // NVML: cuda:0 busy inside its kernel regions, cuda:1 flat, GPU 2 unused.
    for k in 0..20 {
        let t = 0.25 + 0.5 * k as f64;
        let busy = in_kernel0(t);
        for (device, sm) in [(0, if busy { 90 } else { 10 }), (1, 80), (2, 0)] {
            gpu_sampler::log(&GpuSample {
                device,
                t_us: us(t),
                sm_util: sm,
                mem_util: 30,
                power_w: if device == 0 && busy { 500.0 } else { 100.0 },
                pcie_tx_mbps: 10.0,
                pcie_rx_mbps: 1000.0,
                mem_used_mib: 2048,
                sm_clock_mhz: 1980,
                ecc_uncorrected: 0,
                fault_xids: 0,
                last_xid: 0,
            });
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Format {
    Text,
    TextAnsi,
    Json,
    JsonFlat,
}

fn record(format: Format) -> String {
    record_with(format, timeline::RECORDING_FILTER)
}

/// The scenario's log as a daemon writes it with `RUST_LOG=filter`.
fn record_with(format: Format, filter: &str) -> String {
    let buf = Buf::default();
    let b = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(buf.clone());
    match format {
        Format::Text => tracing::subscriber::with_default(b.with_ansi(false).finish(), scenario),
        Format::TextAnsi => tracing::subscriber::with_default(b.with_ansi(true).finish(), scenario),
        Format::Json => tracing::subscriber::with_default(b.json().finish(), scenario),
        Format::JsonFlat => {
            tracing::subscriber::with_default(b.json().flatten_event(true).finish(), scenario)
        }
    }
    let bytes = buf.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

/// GPU samples (several per second) stay out of an INFO log; the recording filter the
/// timeline docs give keeps them, and the timeline reads them.
#[test]
fn gpu_samples_log_at_debug() {
    let info = record_with(Format::Text, "info");
    assert!(!info.contains("gpu_sample"), "{info}");
    assert!(
        info.contains("timeline ev="),
        "pipeline events stay at INFO"
    );
    let recorded = record(Format::Text);
    assert!(
        recorded.contains(" DEBUG filprove::timeline: gpu_sample"),
        "{recorded}"
    );
    let r = timeline::analyze(&timeline::parse_log(&recorded));
    assert_eq!(r.samples, 60);
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn check_report(r: &Report, what: &str) {
    assert_eq!(r.skipped_lines, 0, "{what}: {:?}", r.skipped);
    assert_eq!(r.other_lines, 1, "{what}");
    assert_eq!(r.samples, 60, "{what}");
    assert_eq!(r.summaries, 3, "{what}");
    assert_eq!(r.t0_us, T0, "{what}");
    assert!(close(r.run_span_s, 9.5), "{what}: {}", r.run_span_s);
    assert_eq!(r.partitions_proved, 5, "{what}");
    assert_eq!(r.devices.len(), 2, "{what}");

    let d0 = &r.devices[0];
    assert_eq!(d0.device, DEV0, "{what}");
    assert_eq!(d0.ordinal, Some(0));
    assert_eq!(d0.workers, vec![0, 1]);
    assert_eq!(d0.partitions, 4);
    assert!(
        close(d0.start_at_s, 1.0) && close(d0.end_at_s, 9.5),
        "{what}: {d0:?}"
    );
    assert!(close(d0.span_s, 8.5));
    assert!(close(d0.kernel_busy_s, 6.8), "{what}: {}", d0.kernel_busy_s);
    assert!(close(d0.kernel_util.unwrap(), 0.8), "{what}");
    assert!(close(d0.gpu_busy_s, 6.6), "{what}");
    assert!(close(d0.gpu_util.unwrap(), 6.6 / 8.5));
    assert_eq!(d0.kernel_regions, KERNEL0.to_vec(), "{what}");
    let g = &d0.idle_gaps;
    assert_eq!(g.count, 2, "{what}");
    assert!(close(g.total_s, 1.5) && close(g.max_s, 1.0) && close(g.mean_s, 0.75));
    assert!(close(g.p50_s, 0.5) && close(g.p90_s, 1.0) && close(g.p99_s, 1.0));
    assert!(close(d0.partitions_per_min.unwrap(), 4.0 * 60.0 / 8.5));
    assert!(close(d0.s_per_partition.unwrap(), 8.5 / 4.0));
    let s0 = d0.gpu_samples.as_ref().expect("samples of cuda:0");
    // Samples at 1.25, 1.75, ... 9.25 lie in the span; 14 of them in kernel regions.
    assert_eq!((s0.count, s0.in_kernel), (17, 14), "{what}");
    assert!(close(s0.sm_util_kernel_mean.unwrap(), 90.0));
    assert!(close(s0.sm_util_idle_mean.unwrap(), 10.0));
    assert!(close(
        s0.power_w_mean.unwrap(),
        (14.0 * 500.0 + 3.0 * 100.0) / 17.0
    ));
    assert!(close(s0.pcie_rx_mbps_mean.unwrap(), 1000.0));
    assert!(close(s0.pcie_tx_mbps_mean.unwrap(), 10.0));
    assert_eq!(s0.mem_used_mib_max, Some(2048.0));

    let d1 = &r.devices[1];
    assert_eq!((d1.device.as_str(), d1.workers.clone()), (DEV1, vec![0]));
    assert!(close(d1.span_s, 4.0) && close(d1.kernel_util.unwrap(), 1.0));
    assert_eq!(d1.idle_gaps.count, 0);
    assert_eq!(d1.gpu_samples.as_ref().unwrap().count, 8);
    assert!(close(
        d1.gpu_samples
            .as_ref()
            .unwrap()
            .sm_util_kernel_mean
            .unwrap(),
        80.0
    ));

    assert_eq!(r.other_gpus.len(), 1, "{what}");
    assert_eq!(r.other_gpus[0].ordinal, 2);

    // Partitions: 5 proved + j3 twice.
    assert_eq!(r.partitions.len(), 7, "{what}");
    let part = |job: &str, p: u64, attempt: u32| {
        r.partitions
            .iter()
            .find(|x| x.job == job && x.partition == p && x.attempt == attempt)
            .unwrap_or_else(|| panic!("{what}: no {job}/{p} #{attempt}"))
    };
    let p = part("j1", 2, 1);
    assert_eq!((p.device.as_deref(), p.worker), (Some(DEV0), Some(0)));
    for (got, want) in [
        (p.synthesis_s, 1.5),
        (p.queue_s, 0.5),
        (p.staging_s, 0.5),
        (p.lock_wait_s, 2.5),
        (p.kernel_s, 2.0),
        (p.gpu_s, 2.0),
    ] {
        assert!(close(got.unwrap(), want), "{what}: {p:?}");
    }
    let p = part("j2", 1, 1);
    assert_eq!(p.staging_s, None);
    assert!(close(p.queue_s.unwrap(), 0.0));
    let s = part("j1", 0, 1)
        .summary
        .as_ref()
        .expect("summary passed through");
    assert_eq!(s["prove_ms"], 1700);
    assert_eq!(s["msm_g1_ms"], 900);
    assert_eq!(s["h2d_bytes"], 123_456);
    let (a1, a2) = (part("j3", 0, 1), part("j3", 0, 2));
    assert!(close(a1.synthesis_s.unwrap(), 0.4) && close(a2.synthesis_s.unwrap(), 0.2));
    assert_eq!(a2.device, None);
    let stages: Vec<&str> = r.stages.iter().map(|s| s.stage).collect();
    assert_eq!(
        stages,
        [
            "synthesis",
            "queue",
            "staging",
            "stage_wait",
            "stage_copy",
            "lock_wait",
            "kernel",
            "gpu"
        ]
    );
    assert_eq!(r.stages[0].stats.count, 7);
    // The staging's parts come from the two staged partitions' summaries (j1/0: 0.05 +
    // 0.15 s, j1/2: 0.35 + 0.15 s), not from j2/1's, which was not staged.
    let stage = |name: &str| &r.stages.iter().find(|s| s.stage == name).unwrap().stats;
    let (wait, copy) = (stage("stage_wait"), stage("stage_copy"));
    assert_eq!((wait.count, copy.count), (2, 2), "{what}");
    assert!(
        close(wait.mean_s, 0.2) && close(wait.max_s, 0.35),
        "{what}: {wait:?}"
    );
    assert!(close(copy.mean_s, 0.15), "{what}: {copy:?}");
}

#[test]
fn text_log_with_known_intervals() {
    let text = record(Format::Text);
    assert!(
        text.contains(" INFO filprove::timeline: timeline ev=\"gpu_start\""),
        "{text}"
    );
    let log = timeline::parse_log(&text);
    check_report(&timeline::analyze(&log), "text");
}

#[test]
fn coloured_text_log() {
    let text = record(Format::TextAnsi);
    assert!(text.contains('\u{1b}'));
    check_report(&timeline::analyze(&timeline::parse_log(&text)), "ansi");
}

#[test]
fn json_logs_nested_and_flattened() {
    let json = record(Format::Json);
    let first: serde_json::Value = serde_json::from_str(json.lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["target"], "filprove::timeline");
    assert_eq!(first["fields"]["message"], "timeline");
    check_report(&timeline::analyze(&timeline::parse_log(&json)), "json");
    let flat = record(Format::JsonFlat);
    check_report(&timeline::analyze(&timeline::parse_log(&flat)), "json flat");
}

#[test]
fn hand_written_text_lines() {
    // The documented example line, events with no t_us (the log's timestamp is used),
    // and unquoted values.
    let log = "2026-11-30T03:40:00.123456Z  INFO filprove::timeline: timeline ev=\"gpu_start\" job=\"j1\" partition=3 device=\"cuda:0 NVIDIA H200\" worker=1\n\
               2026-11-30T03:40:01.123456Z  INFO filprove::timeline: timeline ev=gpu_end job=j1 partition=3 device=cuda:0 NVIDIA H200 worker=1\n";
    let l = timeline::parse_log(log);
    assert_eq!(l.skipped_lines, 0, "{:?}", l.skipped);
    assert_eq!(l.events.len(), 2);
    assert_eq!(l.events[0].t_us, T0 + 123_456);
    assert_eq!(l.events[1].device.as_deref(), Some(DEV0));
    let r = timeline::analyze(&l);
    assert!(close(r.devices[0].gpu_busy_s, 1.0));
    assert!(close(r.devices[0].gpu_util.unwrap(), 1.0));
    assert_eq!(r.devices[0].kernel_util, Some(0.0));

    // A summary line as the engine writes it: floats, displayed strings with spaces, an
    // empty displayed value; every field passed through.
    let log = "2026-11-30T03:40:02Z  INFO filprove::timeline: partition job=j1 kind=\"porep-32g\" partition=3 device=\"cuda:0 NVIDIA H200\" worker=1 stage_ms=12.5 msm_h_ms=800.25 h2d_bytes=1073741824 host_syncs=3 transfers=h2d 1.0 GiB pinned fallbacks=\n";
    let l = timeline::parse_log(log);
    assert_eq!(
        (l.skipped_lines, l.summaries.len()),
        (0, 1),
        "{:?}",
        l.skipped
    );
    let r = timeline::analyze(&l);
    let s = r.partitions[0].summary.as_ref().unwrap();
    assert_eq!(
        (r.partitions[0].job.as_str(), r.partitions[0].partition),
        ("j1", 3)
    );
    assert_eq!(r.partitions[0].worker, Some(1));
    assert_eq!(s["stage_ms"], 12.5);
    assert_eq!(s["msm_h_ms"], 800.25);
    assert_eq!(s["h2d_bytes"], 1_073_741_824u64);
    assert_eq!(s["host_syncs"], 3);
    assert_eq!(s["kind"], "porep-32g");
    assert_eq!(s["transfers"], "h2d 1.0 GiB pinned");
    assert_eq!(s["fallbacks"], "");
    assert_eq!(s["device"], DEV0);
}

#[test]
fn garbage_is_skipped_and_counted() {
    let mut text = record(Format::Text);
    let garbage = [
        "garbage",
        "{not json",
        "[1, 2]",
        "{\"a\": 1}",
        "2026-11-30T03:40:00Z  INFO filprove::timeline: timeline ev=\"bogus\" job=\"x\" partition=1",
        "2026-11-30T03:40:00Z  INFO filprove::timeline: timeline ev=\"gpu_start\" partition=1",
        "2026-11-30T03:40:00Z  INFO filprove::timeline: timeline ev=\"gpu_start\" job=\"x\" partition=-1",
        "2026-11-30T03:40:00Z  INFO filprove::timeline: gpu_sample sm_util=3",
        "{\"target\":\"filprove::timeline\",\"fields\":{\"message\":\"timeline\",\"job\":\"x\"}}",
        "2026-11-30T03:40:00Z",
        "2026-11-30T03:40:00Z NOTALEVEL x",
        "2026-11-30T03:40:00\u{e9}Z  INFO filprove::timeline: timeline",
        "thread 'main' panicked at src/main.rs:1:1: k=\"unterminated",
        "\u{1b}[31mred\u{1b}[",
    ];
    for g in garbage {
        text.push_str(g);
        text.push('\n');
    }
    text.push_str("\n\n");
    let log = timeline::parse_log(&text);
    assert_eq!(log.skipped_lines, garbage.len(), "{:?}", log.skipped);
    assert_eq!(log.skipped.len(), 10);
    let r = timeline::analyze(&log);
    assert_eq!(r.skipped_lines, garbage.len());
    assert_eq!(r.partitions_proved, 5);
    let summary = timeline::summary(&r, 50);
    assert!(
        summary.contains(&format!("{} skipped", garbage.len())),
        "{summary}"
    );
    // Nothing at all, or only garbage: an empty report, and a picture all the same.
    for text in ["", "garbage\n\u{0}\u{ffff}\n"] {
        let log = timeline::parse_log(text);
        let r = timeline::analyze(&log);
        assert!(r.devices.is_empty() && r.partitions.is_empty());
        check_xml(&timeline::render_svg(&r, &log.samples));
    }
}

/// A small well-formedness check: tags nest and close, attributes are quoted, `<` and `&`
/// appear only as markup or entities. Returns the element names in document order.
fn check_xml(doc: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut names = Vec::new();
    let mut rest = doc.trim_end();
    let check_text = |t: &str| {
        let mut t = t;
        while let Some(i) = t.find('&') {
            let end = t[i..].find(';').expect("unterminated entity");
            let ent = &t[i + 1..i + end];
            assert!(
                ["amp", "lt", "gt", "quot", "apos"].contains(&ent),
                "bad entity &{ent};"
            );
            t = &t[i + end + 1..];
        }
    };
    while !rest.is_empty() {
        let lt = rest.find('<').unwrap_or(rest.len());
        check_text(&rest[..lt]);
        assert!(
            !stack.is_empty() || rest[..lt].trim().is_empty(),
            "text outside the root"
        );
        rest = &rest[lt..];
        if rest.is_empty() {
            break;
        }
        let gt = rest.find('>').expect("unterminated tag");
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched close"
            );
            if stack.is_empty() {
                assert!(rest.trim().is_empty(), "content after the root");
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, mut attrs) = tag.split_once(' ').unwrap_or((tag, ""));
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "bad element name {name:?}"
        );
        names.push(name.to_string());
        let mut seen = std::collections::HashSet::new();
        loop {
            attrs = attrs.trim_start();
            if attrs.is_empty() {
                break;
            }
            let eq = attrs.find("=\"").expect("unquoted attribute");
            let key = &attrs[..eq];
            assert!(seen.insert(key.to_string()), "duplicate attribute {key}");
            assert!(
                key.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_:".contains(c)),
                "{key:?}"
            );
            let v = &attrs[eq + 2..];
            let close = v.find('"').expect("unterminated attribute");
            assert!(!v[..close].contains('<'), "< in attribute");
            check_text(&v[..close]);
            attrs = &v[close + 1..];
        }
        if stack.is_empty() {
            assert_eq!(name, "svg", "root");
            assert!(names.len() == 1, "second root");
        }
        if !self_closing {
            stack.push(name.to_string());
        }
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    names
}

#[test]
fn picture_has_rows_lanes_and_panels() {
    let log = timeline::parse_log(&record(Format::Json));
    let r = timeline::analyze(&log);
    let svg = timeline::render_svg(&r, &log.samples);
    let names = check_xml(&svg);
    assert!(names.iter().filter(|n| *n == "rect").count() > 40);
    let count = |s: &str| svg.matches(s).count();
    assert_eq!(count(r#"class="partition-row""#), 7);
    assert!(svg.contains(r#"data-job="j3" data-partition="0" data-attempt="2""#));
    assert_eq!(count(r#"class="device-lane""#), 2);
    assert_eq!(count(r#"class="worker-lane""#), 3);
    assert!(svg.contains(&format!(
        r#"class="worker-lane" data-device="{DEV0}" data-worker="1""#
    )));
    assert_eq!(count(r#"class="sample-panel""#), 3);
    for m in ["sm_util", "power_w", "pcie"] {
        assert!(svg.contains(&format!(r#"data-metric="{m}""#)));
    }
    // One line per GPU in SM and power, rx and tx in PCIe.
    assert_eq!(count(r#"class="sample-line" data-device="0""#), 4);
    assert_eq!(count(r#"class="sample-line" data-device="2""#), 4);
    // Bars of every kind, the two idle gaps of cuda:0, ticks in seconds.
    for c in [
        "synthesis",
        "queued",
        "staging",
        "lock-wait",
        "kernel",
        "gpu",
    ] {
        assert!(svg.contains(&format!(r#"<rect class="{c}""#)), "no {c} bar");
    }
    assert_eq!(count(r#"<rect class="gap""#), 2);
    assert!(svg.contains(">idle gap 1.000 s</title>"));
    assert!(
        svg.contains(">0 s</text>") && svg.contains(">9 s</text>"),
        "ticks"
    );

    let html = timeline::render_html(&r, &log.samples, &timeline::summary(&r, 50));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(html.contains("kernel regions 6.800 s = 80.0 %"), "{html}");
    assert!(
        !html.contains("src=") && !html.contains("href="),
        "self-contained"
    );
    // Without samples: no panels.
    let no_samples = timeline::render_svg(&r, &[]);
    check_xml(&no_samples);
    assert_eq!(no_samples.matches(r#"class="sample-panel""#).count(), 0);
}

#[test]
fn command_writes_svg_html_json() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.log");
    let mut text = record(Format::Text);
    text.push_str("garbage line\n");
    std::fs::write(&log, text).unwrap();
    let (svg, html, json) = (
        dir.path().join("t.svg"),
        dir.path().join("t.html"),
        dir.path().join("t.json"),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_filprove"))
        .arg("timeline")
        .arg(&log)
        .arg("--svg")
        .arg(&svg)
        .arg("--html")
        .arg(&html)
        .arg("--json")
        .arg(&json)
        .env("FILPROVE_LOG_FORMAT", "json")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 skipped"), "{stdout}");
    assert!(
        stdout.contains("device cuda:0 NVIDIA H200 (workers 0,1): 4 partitions over 8.500 s"),
        "{stdout}"
    );
    assert!(
        stdout.contains("kernel regions 6.800 s = 80.0 %"),
        "{stdout}"
    );
    assert!(
        stdout.contains("idle gaps between kernel regions: 2, total 1.500 s"),
        "{stdout}"
    );
    assert!(
        stdout.contains("SM util 90.0 % in kernel regions, 10.0 % idle"),
        "{stdout}"
    );
    check_xml(&std::fs::read_to_string(&svg).unwrap());
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["skipped_lines"], 1);
    assert_eq!(
        v["devices"][0]["kernel_util"]
            .as_f64()
            .map(|x| (x * 1e6).round()),
        Some(800_000.0)
    );
    assert_eq!(v["devices"][0]["idle_gaps"]["count"], 2);
    assert_eq!(v["partitions"][0]["summary"]["h2d_bytes"], 123_456);

    // Standard input; a missing file is an error, not a panic.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_filprove"))
        .args(["timeline", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(record(Format::Json).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("kernel regions 6.800 s = 80.0 %"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_filprove"))
        .args(["timeline", "/nonexistent/run.log"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/run.log"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_filprove"))
        .args(["--log-format", "xml", "timeline", "-"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
