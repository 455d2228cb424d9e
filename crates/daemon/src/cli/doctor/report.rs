//! The doctor's findings, section by section, and how they are printed.

use std::fmt::Write as _;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// As it should be.
    Ok,
    /// A fact worth knowing.
    Info,
    /// Works, but probably not as intended.
    Warn,
    /// The daemon would fail, or prove wrongly, with this.
    Fail,
}

impl Level {
    fn label(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Info => "info",
            Level::Warn => "WARN",
            Level::Fail => "FAIL",
        }
    }
}

/// Findings grouped under section titles.
#[derive(Debug, Default)]
pub struct Report {
    sections: Vec<(String, Vec<(Level, String)>)>,
}

impl Report {
    /// Starts a section; later findings go under it.
    pub fn section(&mut self, title: &str) {
        self.sections.push((title.to_owned(), Vec::new()));
    }

    /// Adds a finding to the current section.
    pub fn add(&mut self, level: Level, text: impl Into<String>) {
        if self.sections.is_empty() {
            self.section("");
        }
        if let Some((_, findings)) = self.sections.last_mut() {
            findings.push((level, text.into()));
        }
    }

    /// How many findings are failures.
    pub fn failures(&self) -> usize {
        self.count(Level::Fail)
    }

    /// How many findings are warnings.
    pub fn warnings(&self) -> usize {
        self.count(Level::Warn)
    }

    fn count(&self, level: Level) -> usize {
        self.sections
            .iter()
            .flat_map(|(_, f)| f)
            .filter(|(l, _)| *l == level)
            .count()
    }

    /// The report as text: a title per section, one line per finding.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (title, findings) in &self.sections {
            let _ = writeln!(out, "{title}");
            for (level, text) in findings {
                let _ = writeln!(out, "  {:<5} {text}", level.label());
            }
        }
        out
    }
}

/// Bytes as GiB with one decimal.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}
