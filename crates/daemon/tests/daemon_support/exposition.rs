//! The Prometheus text format read back the way a scraper reads it, with the naming
//! rules Prometheus users expect checked on every family.

use std::collections::BTreeMap;

/// One sample line: metric name (with suffix), labels, value.
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A parsed exposition: each family's type, and every sample.
pub struct Exposition {
    pub types: BTreeMap<String, String>,
    pub samples: Vec<Sample>,
}

fn parse_labels(text: &str) -> BTreeMap<String, String> {
    text.split("\",")
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once("=\"").unwrap_or_else(|| panic!("label {p:?}"));
            (k.to_owned(), v.trim_end_matches('"').to_owned())
        })
        .collect()
}

/// Parses `text`, panicking on anything a Prometheus scraper would reject, and checks
/// every family: HELP and TYPE given, counters end in `_total`, names end in a base unit
/// where they carry one (no `_ms`, `_mib`, `_mbps`, `_mhz`, `_percent`, `_util`).
pub fn parse(text: &str) -> Exposition {
    let mut types = BTreeMap::new();
    let mut helped = Vec::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.push(rest.split_whitespace().next().unwrap().to_owned());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(
                helped.last().is_some_and(|h| h == name),
                "TYPE without HELP: {line}"
            );
            types.insert(name.to_owned(), kind.to_owned());
        } else if !line.is_empty() {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, parse_labels(l.trim_end_matches('}'))),
                None => (series, BTreeMap::new()),
            };
            let value = match value {
                "+Inf" => f64::INFINITY,
                v => v.parse().unwrap_or_else(|_| panic!("value of {line}")),
            };
            samples.push(Sample {
                name: name.to_owned(),
                labels,
                value,
            });
        }
    }
    for (name, kind) in &types {
        assert!(name.starts_with("filprove_"), "{name}");
        assert_eq!(
            kind == "counter",
            name.ends_with("_total"),
            "{name} is a {kind}"
        );
        for unit in ["_ms", "_mib", "_mbps", "_mhz", "_percent", "_util"] {
            assert!(!name.contains(unit), "{name}: not a base unit");
        }
        assert!(
            ["counter", "gauge", "histogram"].contains(&kind.as_str()),
            "{name}: {kind}"
        );
    }
    for s in &samples {
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|x| {
                s.name
                    .strip_suffix(x)
                    .filter(|f| types.get(*f).is_some_and(|t| t == "histogram"))
            })
            .unwrap_or(&s.name);
        assert!(types.contains_key(family), "sample {} without TYPE", s.name);
    }
    Exposition { types, samples }
}

impl Exposition {
    /// A histogram's buckets for the series with `labels`: (le, cumulative count), in
    /// order, checked cumulative, ending at +Inf equal to `_count`.
    pub fn buckets(&self, family: &str, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
        assert_eq!(
            self.types.get(family).map(String::as_str),
            Some("histogram")
        );
        let matches = |s: &Sample| {
            labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        };
        let bucket = format!("{family}_bucket");
        let buckets: Vec<(f64, f64)> = self
            .samples
            .iter()
            .filter(|s| s.name == bucket && matches(s))
            .map(|s| {
                let le = &s.labels["le"];
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                (le, s.value)
            })
            .collect();
        assert!(!buckets.is_empty(), "no buckets of {family} {labels:?}");
        for w in buckets.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 <= w[1].1, "{family}: {w:?}");
        }
        let count = self
            .samples
            .iter()
            .find(|s| s.name == format!("{family}_count") && matches(s))
            .unwrap()
            .value;
        assert_eq!(buckets.last().copied(), Some((f64::INFINITY, count)));
        buckets
    }
}
