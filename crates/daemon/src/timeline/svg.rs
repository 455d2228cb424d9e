//! The waterfall picture: one row per partition (synthesis, queued, staging, lock wait,
//! kernel region, prove call), one lane per device (kernel regions and the idle gaps
//! between them) and per prover worker, and under them the NVML samples (SM util, power,
//! PCIe) as line plots on the same time axis. Hand-written SVG; every text escaped.

use std::fmt::Write as _;

use super::analyze::Report;
use super::{Ev, Sample};

const WIDTH: f64 = 1400.0;
const LEFT: f64 = 190.0;
const RIGHT: f64 = 30.0;
const LANE: f64 = 18.0;
const PANEL: f64 = 90.0;

/// (class, label, colour) of each bar kind.
const BARS: [(&str, &str, &str); 6] = [
    ("synthesis", "synthesis", "#4e79a7"),
    ("queued", "queued", "#bab0ac"),
    ("staging", "staging", "#f28e2b"),
    ("lock-wait", "lock wait", "#e15759"),
    ("kernel", "kernel region", "#59a14f"),
    ("gpu", "prove call", "#1b5e20"),
];
const GAP_COLOUR: &str = "#f4a6a6";
const DEVICE_COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
];

/// Escapes text and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

struct Axis {
    lo: f64,
    hi: f64,
}

impl Axis {
    fn x(&self, t: f64) -> f64 {
        LEFT + (t.clamp(self.lo, self.hi) - self.lo) / (self.hi - self.lo) * (WIDTH - LEFT - RIGHT)
    }
}

/// A bar over [a, b] at height y..y+h, with a tooltip.
fn bar(o: &mut String, ax: &Axis, class: &str, (a, b): (f64, f64), (y, h): (f64, f64), tip: &str) {
    if b < ax.lo || a > ax.hi {
        return;
    }
    let (x0, x1) = (ax.x(a), ax.x(b));
    let colour = BARS
        .iter()
        .find(|k| k.0 == class)
        .map_or(GAP_COLOUR, |k| k.2);
    let _ = write!(
        o,
        r#"<rect class="{class}" x="{x0:.2}" y="{y:.2}" width="{:.2}" height="{h:.2}" fill="{colour}"><title>{}</title></rect>"#,
        (x1 - x0).max(0.5),
        esc(tip)
    );
}

fn nice_step(span: f64) -> f64 {
    let raw = span / 10.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn label_s(t: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil() as usize
    };
    format!("{t:.decimals$} s")
}

/// The picture as a standalone SVG document.
pub fn render_svg(r: &Report, samples: &[Sample]) -> String {
    let mut lo = f64::MAX;
    let mut hi = f64::MIN;
    for t in r.partitions.iter().flat_map(|p| p.events_at_s.values()) {
        lo = lo.min(*t);
        hi = hi.max(*t);
    }
    let rel = |t: u64| (t as f64 - r.t0_us as f64) / 1e6;
    if lo > hi {
        for s in samples {
            lo = lo.min(rel(s.t_us));
            hi = hi.max(rel(s.t_us));
        }
    }
    if lo > hi {
        (lo, hi) = (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.01).max(1e-3);
    let ax = Axis {
        lo: lo - pad,
        hi: hi + pad,
    };

    let n = r.partitions.len();
    let row = (3200.0 / n.max(1) as f64).clamp(2.0, 16.0);
    let lanes: Vec<(usize, Option<u64>)> = r
        .devices
        .iter()
        .enumerate()
        .flat_map(|(i, d)| {
            std::iter::once((i, None)).chain(d.workers.iter().map(move |w| (i, Some(*w))))
        })
        .collect();
    let mut by_gpu: std::collections::BTreeMap<u64, Vec<&Sample>> = Default::default();
    for s in samples {
        by_gpu.entry(s.device).or_default().push(s);
    }
    let panels: &[(&str, &str)] = if by_gpu.is_empty() {
        &[]
    } else {
        &[
            ("sm_util", "SM util %"),
            ("power_w", "power W"),
            ("pcie", "PCIe MB/s (rx solid, tx dashed)"),
        ]
    };
    let rows_top = 96.0;
    let lanes_top = rows_top + n as f64 * row + 28.0;
    let panels_top = lanes_top + lanes.len() as f64 * LANE + 28.0;
    let height = panels_top + panels.len() as f64 * (PANEL + 24.0) + 40.0;

    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="sans-serif" font-size="11">"#
    );
    o.push_str(r#"<rect x="0" y="0" width="100%" height="100%" fill="white"/>"#);
    let title = format!(
        "filprove timeline: {} partition attempts, {} device(s), run span {:.3} s",
        n,
        r.devices.len(),
        r.run_span_s
    );
    let _ = write!(
        o,
        r#"<text x="10" y="22" font-size="15" font-weight="bold">{}</text>"#,
        esc(&title)
    );
    let mut lx = 10.0;
    for (class, label, colour) in BARS
        .iter()
        .copied()
        .chain([("gap", "idle gap", GAP_COLOUR)])
    {
        let _ = write!(
            o,
            r#"<g class="legend" data-kind="{class}"><rect x="{lx}" y="34" width="12" height="12" fill="{colour}"/><text x="{}" y="44">{label}</text></g>"#,
            lx + 16.0
        );
        lx += 30.0 + label.len() as f64 * 6.5;
    }

    // Time axis: gridlines through everything, labels on top and at the bottom.
    let step = nice_step(ax.hi - ax.lo);
    o.push_str(r#"<g class="axis">"#);
    for k in (ax.lo / step).ceil() as i64..=(ax.hi / step).floor() as i64 {
        let t = k as f64 * step;
        let x = ax.x(t);
        let _ = write!(
            o,
            r##"<line x1="{x:.2}" y1="{}" x2="{x:.2}" y2="{:.0}" stroke="#ddd"/><text x="{x:.2}" y="{}" text-anchor="middle">{}</text><text x="{x:.2}" y="{:.0}" text-anchor="middle">{}</text>"##,
            rows_top - 14.0,
            height - 30.0,
            rows_top - 18.0,
            label_s(t, step),
            height - 16.0,
            label_s(t, step)
        );
    }
    o.push_str("</g>");

    // Partition rows.
    let _ = write!(
        o,
        r#"<text x="10" y="{}" font-weight="bold">partitions</text>"#,
        rows_top - 18.0
    );
    for (i, p) in r.partitions.iter().enumerate() {
        let y = rows_top + i as f64 * row;
        let name = format!(
            "{}/p{}{}",
            p.job,
            p.partition,
            if p.attempt > 1 {
                format!(" #{}", p.attempt)
            } else {
                String::new()
            }
        );
        let _ = write!(
            o,
            r#"<g class="partition-row" data-job="{}" data-partition="{}" data-attempt="{}">"#,
            esc(&p.job),
            p.partition,
            p.attempt
        );
        if row >= 10.0 {
            // "job/p3 · cuda:0 w1", the job's id shortened to fit.
            let mut at = String::new();
            if let Some(d) = p
                .device
                .as_deref()
                .and_then(|d| d.split_whitespace().next())
            {
                at = format!(" \u{b7} {d}");
                if let Some(w) = p.worker {
                    at += &format!(" w{w}");
                }
            }
            let room = 30usize.saturating_sub(at.chars().count());
            let mut short: String = name.chars().take(room).collect();
            if short.len() < name.len() {
                short.pop();
                short.push('\u{2026}');
            }
            let _ = write!(
                o,
                r#"<text x="10" y="{:.2}">{}</text>"#,
                y + row * 0.75,
                esc(&(short + &at))
            );
        }
        let h = row * 0.8;
        let pick = p.picked_at();
        let spans = [
            ("synthesis", p.at(Ev::SynthStart), p.at(Ev::SynthEnd)),
            ("queued", p.at(Ev::SynthEnd), pick),
            ("staging", p.at(Ev::StageStart), p.at(Ev::StageEnd)),
            ("lock-wait", p.at(Ev::LockWait), p.at(Ev::LockAcquired)),
            ("kernel", p.at(Ev::LockAcquired), p.at(Ev::LockReleased)),
        ];
        for (class, a, b) in spans {
            if let (Some(a), Some(b)) = (a, b) {
                bar(
                    &mut o,
                    &ax,
                    class,
                    (a, b),
                    (y, h),
                    &format!("{name}: {class} {:.3} s", b - a),
                );
            }
        }
        if let (Some(a), Some(b)) = (p.at(Ev::GpuStart), p.at(Ev::GpuEnd)) {
            bar(
                &mut o,
                &ax,
                "gpu",
                (a, b),
                (y + h / 3.0, h / 3.0),
                &format!("{name}: prove call {:.3} s", b - a),
            );
        }
        o.push_str("</g>");
    }

    // Device and worker lanes.
    let _ = write!(
        o,
        r#"<text x="10" y="{}" font-weight="bold">devices and GPU workers</text>"#,
        lanes_top - 8.0
    );
    for (li, (di, worker)) in lanes.iter().enumerate() {
        let d = &r.devices[*di];
        let y = lanes_top + li as f64 * LANE;
        let short = d
            .device
            .split_whitespace()
            .next()
            .unwrap_or(&d.device)
            .to_string();
        let h = LANE - 4.0;
        match worker {
            None => {
                let _ = write!(
                    o,
                    r#"<g class="device-lane" data-device="{}"><text x="10" y="{:.2}" font-weight="bold">{}</text>"#,
                    esc(&d.device),
                    y + 13.0,
                    esc(&format!("{short} kernel regions"))
                );
                for k in &d.kernel_regions {
                    bar(
                        &mut o,
                        &ax,
                        "kernel",
                        (k[0], k[1]),
                        (y, h),
                        &format!("kernel region {:.3} s", k[1] - k[0]),
                    );
                }
                for w in d.kernel_regions.windows(2) {
                    let (a, b) = (w[0][1], w[1][0]);
                    bar(
                        &mut o,
                        &ax,
                        "gap",
                        (a, b),
                        (y, h),
                        &format!("idle gap {:.3} s", b - a),
                    );
                }
            }
            Some(w) => {
                let _ = write!(
                    o,
                    r#"<g class="worker-lane" data-device="{}" data-worker="{w}"><text x="20" y="{:.2}">{}</text>"#,
                    esc(&d.device),
                    y + 13.0,
                    esc(&format!("{short} worker {w}"))
                );
                let mine = r.partitions.iter().filter(|p| {
                    p.device.as_deref() == Some(d.device.as_str()) && p.worker == Some(*w)
                });
                for p in mine {
                    let name = format!("{}/p{}", p.job, p.partition);
                    for (class, a, b) in [
                        ("staging", p.at(Ev::StageStart), p.at(Ev::StageEnd)),
                        ("lock-wait", p.at(Ev::LockWait), p.at(Ev::LockAcquired)),
                        ("kernel", p.at(Ev::LockAcquired), p.at(Ev::LockReleased)),
                    ] {
                        if let (Some(a), Some(b)) = (a, b) {
                            bar(
                                &mut o,
                                &ax,
                                class,
                                (a, b),
                                (y, h),
                                &format!("{name}: {class} {:.3} s", b - a),
                            );
                        }
                    }
                    if let (Some(a), Some(b)) = (p.at(Ev::GpuStart), p.at(Ev::GpuEnd)) {
                        bar(
                            &mut o,
                            &ax,
                            "gpu",
                            (a, b),
                            (y + h / 3.0, h / 3.0),
                            &format!("{name}: prove call {:.3} s", b - a),
                        );
                    }
                }
            }
        }
        o.push_str("</g>");
    }

    // NVML panels.
    for (pi, (metric, label)) in panels.iter().enumerate() {
        let top = panels_top + pi as f64 * (PANEL + 24.0);
        type Get = fn(&Sample) -> Option<f64>;
        let series: Vec<(Get, &str)> = match *metric {
            "sm_util" => vec![(|s: &Sample| s.sm_util, "")],
            "power_w" => vec![(|s: &Sample| s.power_w, "")],
            _ => vec![
                (|s: &Sample| s.pcie_rx_mbps, ""),
                (|s: &Sample| s.pcie_tx_mbps, "4 3"),
            ],
        };
        let max = if *metric == "sm_util" {
            100.0
        } else {
            let m = by_gpu
                .values()
                .flatten()
                .filter(|s| (ax.lo..=ax.hi).contains(&rel(s.t_us)))
                .flat_map(|s| series.iter().filter_map(|(g, _)| g(s)))
                .fold(0.0, f64::max);
            if m > 0.0 {
                m * 1.1
            } else {
                1.0
            }
        };
        let y = |v: f64| top + PANEL - (v / max).clamp(0.0, 1.0) * PANEL;
        let _ = write!(
            o,
            r##"<g class="sample-panel" data-metric="{metric}"><text x="10" y="{:.2}" font-weight="bold">{}</text><rect x="{LEFT}" y="{top:.2}" width="{}" height="{PANEL}" fill="none" stroke="#999"/><text x="{}" y="{:.2}" text-anchor="end">{}</text><text x="{}" y="{:.2}" text-anchor="end">0</text>"##,
            top - 4.0,
            esc(label),
            WIDTH - LEFT - RIGHT,
            LEFT - 4.0,
            top + 10.0,
            format_max(max),
            LEFT - 4.0,
            top + PANEL
        );
        for (ordinal, ss) in &by_gpu {
            let colour = DEVICE_COLOURS[*ordinal as usize % DEVICE_COLOURS.len()];
            // The device's kernel regions, faintly, behind its line.
            if let Some(d) = r.devices.iter().find(|d| d.ordinal == Some(*ordinal)) {
                for k in &d.kernel_regions {
                    let (x0, x1) = (ax.x(k[0]), ax.x(k[1]));
                    let _ = write!(
                        o,
                        r#"<rect x="{x0:.2}" y="{top:.2}" width="{:.2}" height="{PANEL}" fill="{colour}" fill-opacity="0.08"/>"#,
                        (x1 - x0).max(0.5)
                    );
                }
            }
            for (get, dash) in &series {
                let pts = polyline(ss, &ax, *get, &rel, &y);
                let _ = write!(
                    o,
                    r#"<polyline class="sample-line" data-device="{ordinal}" points="{pts}" fill="none" stroke="{colour}" stroke-width="1.2" stroke-dasharray="{}"/>"#,
                    if dash.is_empty() { "none" } else { dash }
                );
            }
        }
        let mut lx = WIDTH - RIGHT - 80.0 * by_gpu.len() as f64;
        for ordinal in by_gpu.keys() {
            let colour = DEVICE_COLOURS[*ordinal as usize % DEVICE_COLOURS.len()];
            let _ = write!(
                o,
                r#"<line x1="{lx}" y1="{:.2}" x2="{}" y2="{:.2}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{:.2}">cuda:{ordinal}</text>"#,
                top - 8.0,
                lx + 14.0,
                top - 8.0,
                lx + 18.0,
                top - 4.0
            );
            lx += 80.0;
        }
        o.push_str("</g>");
    }
    o.push_str("</svg>\n");
    o
}

fn format_max(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Points of one series, at most the lowest and highest value per pixel column (so a dip
/// stays visible however many samples there are).
fn polyline(
    s: &[&Sample],
    ax: &Axis,
    get: fn(&Sample) -> Option<f64>,
    rel: &impl Fn(u64) -> f64,
    y: &impl Fn(f64) -> f64,
) -> String {
    let mut pts: Vec<(f64, f64)> = s
        .iter()
        .filter(|x| (ax.lo..=ax.hi).contains(&rel(x.t_us)))
        .filter_map(|x| Some((ax.x(rel(x.t_us)), get(x)?)))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = String::new();
    let mut i = 0;
    while i < pts.len() {
        let col = pts[i].0.floor();
        let mut j = i;
        while j < pts.len() && pts[j].0.floor() == col {
            j += 1;
        }
        let group = &pts[i..j];
        if group.len() <= 2 {
            for (x, v) in group {
                let _ = write!(out, "{x:.2},{:.2} ", y(*v));
            }
        } else {
            let lo = group.iter().map(|p| p.1).fold(f64::MAX, f64::min);
            let hi = group.iter().map(|p| p.1).fold(f64::MIN, f64::max);
            let _ = write!(out, "{col:.2},{:.2} {col:.2},{:.2} ", y(hi), y(lo));
        }
        i = j;
    }
    out.trim_end().to_string()
}

/// A self-contained HTML page: the text summary and the SVG inline.
pub fn render_html(r: &Report, samples: &[Sample], summary: &str) -> String {
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>filprove timeline</title>\n");
    o.push_str("<style>body{font-family:sans-serif;margin:16px}pre{background:#f6f6f6;padding:8px;overflow:auto}svg{max-width:none}</style></head><body>\n");
    o.push_str("<h1>filprove timeline</h1>\n<pre>");
    o.push_str(&esc(summary));
    o.push_str("</pre>\n<div>");
    o.push_str(&render_svg(r, samples));
    o.push_str("</div>\n</body></html>\n");
    o
}
