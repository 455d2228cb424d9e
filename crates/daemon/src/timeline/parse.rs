//! Reading a log: tracing-subscriber's JSON lines or its default text format, into the
//! timeline's events, GPU samples and partition summaries. Lines of other targets are
//! counted; lines that are neither (or timeline lines with missing fields) are skipped
//! and counted, never fatal.

use serde_json::{Map, Value};

use super::{Ev, Event, Log, Sample, Summary};

/// The engine's and the sampler's log target.
pub const TARGET: &str = "filprove::timeline";

/// What one line was.
enum Line {
    /// A log line of another target, or another message of ours.
    Other,
    /// Not readable, with the reason.
    Bad(String),
    /// One of ours: its timestamp (µs) and fields, message included.
    Ours(Option<u64>, Map<String, Value>),
}

/// Parses a whole log (both formats may be mixed, line by line).
pub fn parse_log(text: &str) -> Log {
    let mut log = Log::default();
    for (i, raw) in text.lines().enumerate() {
        let line = strip_ansi(raw);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        log.lines += 1;
        let parsed = if line.starts_with('{') {
            json_line(line)
        } else {
            text_line(line)
        };
        let outcome = match parsed {
            Line::Other => {
                log.other_lines += 1;
                Ok(())
            }
            Line::Bad(why) => Err(why),
            Line::Ours(ts, fields) => record(&mut log, ts, fields),
        };
        if let Err(why) = outcome {
            log.skipped_lines += 1;
            if log.skipped.len() < 10 {
                log.skipped.push((i + 1, why));
            }
        }
    }
    log
}

fn record(log: &mut Log, ts: Option<u64>, f: Map<String, Value>) -> Result<(), String> {
    let t_us = || {
        u64_field(&f, "t_us")
            .or(ts)
            .ok_or("no t_us and no timestamp")
    };
    match f.get("message").and_then(Value::as_str).unwrap_or("") {
        "timeline" => {
            let ev = str_field(&f, "ev").ok_or("timeline event without ev")?;
            let ev = Ev::from_name(&ev).ok_or_else(|| format!("unknown ev {ev:?}"))?;
            log.events.push(Event {
                ev,
                job: str_field(&f, "job").ok_or("timeline event without job")?,
                partition: u64_field(&f, "partition").ok_or("timeline event without partition")?,
                device: str_field(&f, "device"),
                worker: u64_field(&f, "worker"),
                t_us: t_us()?,
            });
        }
        "gpu_sample" => {
            let num = |k: &str| num_field(&f, k);
            log.samples.push(Sample {
                device: u64_field(&f, "device").ok_or("gpu_sample without device")?,
                t_us: t_us()?,
                sm_util: num("sm_util"),
                mem_util: num("mem_util"),
                power_w: num("power_w"),
                pcie_tx_mbps: num("pcie_tx_mbps"),
                pcie_rx_mbps: num("pcie_rx_mbps"),
                mem_used_mib: num("mem_used_mib"),
                sm_clock_mhz: num("sm_clock_mhz"),
            });
        }
        "partition" => {
            let mut fields = f.clone();
            for k in ["message", "job", "partition", "device", "worker", "t_us"] {
                fields.remove(k);
            }
            log.summaries.push(Summary {
                job: str_field(&f, "job").ok_or("partition summary without job")?,
                partition: u64_field(&f, "partition")
                    .ok_or("partition summary without partition")?,
                device: str_field(&f, "device"),
                worker: u64_field(&f, "worker"),
                fields,
            });
        }
        _ => log.other_lines += 1,
    }
    Ok(())
}

fn str_field(f: &Map<String, Value>, k: &str) -> Option<String> {
    match f.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn num_field(f: &Map<String, Value>, k: &str) -> Option<f64> {
    match f.get(k)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn u64_field(f: &Map<String, Value>, k: &str) -> Option<u64> {
    match f.get(k)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Keys tracing-subscriber's JSON formatter puts beside the event's fields.
const JSON_META: &[&str] = &[
    "timestamp",
    "level",
    "target",
    "fields",
    "span",
    "spans",
    "threadName",
    "threadId",
    "filename",
    "line_number",
];

fn json_line(line: &str) -> Line {
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Line::Bad(format!("not JSON: {e}")),
    };
    let Value::Object(top) = v else {
        return Line::Bad("JSON but not an object".into());
    };
    if top.get("target").and_then(Value::as_str) != Some(TARGET) {
        return if top.contains_key("target") || top.contains_key("fields") {
            Line::Other
        } else {
            Line::Bad("JSON object that is not a log event".into())
        };
    }
    // Nested ("fields": {...}, the default) or flattened events.
    let mut fields = match top.get("fields") {
        Some(Value::Object(f)) => f.clone(),
        _ => Map::new(),
    };
    for (k, v) in &top {
        if !JSON_META.contains(&k.as_str()) {
            fields.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    let ts = top
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339_us);
    Line::Ours(ts, fields)
}

/// `2026-11-30T03:40:00.123456Z  INFO [spans: ]filprove::timeline: timeline ev="gpu_start" ...`
fn text_line(line: &str) -> Line {
    let (ts, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let Some(ts) = parse_rfc3339_us(ts) else {
        return Line::Bad("no timestamp".into());
    };
    let rest = rest.trim_start();
    let (level, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if !["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level) {
        return Line::Bad(format!("no level after the timestamp ({level:?})"));
    }
    let marker = format!("{TARGET}: ");
    let at = rest
        .match_indices(&marker)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || rest[..i].ends_with(' ') || rest[..i].ends_with(':'));
    let Some(at) = at else {
        return Line::Other;
    };
    let mut fields = Map::new();
    let mut message = Vec::new();
    let mut last: Option<String> = None;
    for token in tokens(&rest[at + marker.len()..]) {
        match token {
            Token::Pair(k, v) => {
                last = Some(k.clone());
                fields.insert(k, v);
            }
            Token::Word(w) => match last.as_ref().and_then(|k| fields.get_mut(k)) {
                // A displayed (unquoted) value with spaces: `device=cuda:0 NVIDIA H200`.
                Some(Value::String(s)) => {
                    s.push(' ');
                    s.push_str(&w);
                }
                Some(v) => *v = Value::String(format!("{v} {w}")),
                None => message.push(w),
            },
        }
    }
    if !message.is_empty() {
        fields
            .entry("message".to_string())
            .or_insert(Value::String(message.join(" ")));
    }
    Line::Ours(Some(ts), fields)
}

enum Token {
    Pair(String, Value),
    Word(String),
}

/// Splits `msg k=v k="quoted \"v\"" k=1.5` into words and pairs.
fn tokens(s: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return out;
        }
        let mut word = String::new();
        while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '=') {
            word.push(c);
        }
        if chars.next_if_eq(&'=').is_none() || word.is_empty() {
            out.push(Token::Word(word));
            continue;
        }
        let value = if chars.next_if_eq(&'"').is_some() {
            let mut v = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => v.push('\n'),
                        Some('t') => v.push('\t'),
                        Some('r') => v.push('\r'),
                        Some('0') => v.push('\0'),
                        Some(o) => v.push(o),
                        None => {}
                    },
                    c => v.push(c),
                }
            }
            Value::String(v)
        } else {
            let mut v = String::new();
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                v.push(c);
            }
            scalar(&v)
        };
        out.push(Token::Pair(word, value));
    }
}

fn scalar(v: &str) -> Value {
    if let Ok(n) = v.parse::<u64>() {
        return Value::from(n);
    }
    if let Ok(n) = v.parse::<i64>() {
        return Value::from(n);
    }
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() => Value::from(x),
        _ => match v {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(v.to_string()),
        },
    }
}

/// Removes ANSI escape sequences (a log written to a terminal).
fn strip_ansi(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{1b}') {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.clone().next() == Some('[') {
            chars.next();
            // Parameters and intermediates, up to the final byte (@ to ~).
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out.into()
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` to microseconds since the UNIX epoch.
pub fn parse_rfc3339_us(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[13] != b':' || b[16] != b':' || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let mut i = 19;
    let mut micros = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 6 {
                micros = micros * 10 + (b[i] - b'0') as i64;
            }
            i += 1;
        }
        for _ in (i - start)..6 {
            micros *= 10;
        }
    }
    let offset = match &b[i..] {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let m = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if *sign == b'+' {
                m * 60
            } else {
                -m * 60
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset;
    u64::try_from(secs * 1_000_000 + micros).ok()
}

/// Days from 1970-01-01 to a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_rfc3339_us("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_us("1970-01-02T00:00:01.5Z"),
            Some(86_401_500_000)
        );
        assert_eq!(
            parse_rfc3339_us("2026-11-30T03:40:00.123456Z"),
            Some(1_796_010_000_123_456)
        );
        assert_eq!(
            parse_rfc3339_us("2026-11-30T04:40:00.123456+01:00"),
            Some(1_796_010_000_123_456)
        );
        assert_eq!(parse_rfc3339_us("2026-13-30T03:40:00Z"), None);
        assert_eq!(parse_rfc3339_us("hello"), None);
        assert_eq!(parse_rfc3339_us("2026-11-30T03:40:00\u{e9}1234"), None);
        assert_eq!(parse_rfc3339_us("2026-11-30T03:40:00+\u{e9}:00"), None);
    }

    #[test]
    fn text_tokens() {
        let log = parse_log(
            "\u{1b}[2m2026-11-30T03:40:00.123456Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[2mfilprove::timeline\u{1b}[0m\u{1b}[2m:\u{1b}[0m timeline \u{1b}[3mev\u{1b}[0m\u{1b}[2m=\u{1b}[0m\"gpu_start\" job=\"a \\\"b\\\"\" partition=3 device=cuda:0 NVIDIA H200 worker=1\n",
        );
        assert_eq!(log.skipped, vec![]);
        let e = &log.events[0];
        assert_eq!(e.ev, Ev::GpuStart);
        assert_eq!(e.job, "a \"b\"");
        assert_eq!(e.partition, 3);
        assert_eq!(e.device.as_deref(), Some("cuda:0 NVIDIA H200"));
        assert_eq!(e.worker, Some(1));
        assert_eq!(e.t_us, 1_796_010_000_123_456);
    }
}
