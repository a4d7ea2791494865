//! Turns criterion's saved estimates into the markdown tables of `benches/README.md`, with
//! every figure also given as a ratio to a reference measured in the same run
//! (the floor for acks, the default configuration for the model checker).
//!
//! Reads `<criterion dir>/**/new/{benchmark.json,estimates.json}`; the value
//! of a benchmark is the median time per iteration, divided by its
//! throughput elements (acks, tasks, cycles, states) where it has one.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One benchmark's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Criterion group (`ack`, `cycle`, `task`, `model`).
    pub group: String,
    /// Function id (the variant).
    pub function: String,
    /// Parameter (`10000x4`, a size, a cycle name, a configuration).
    pub value: String,
    /// Median nanoseconds per iteration.
    pub ns: f64,
    /// Elements per iteration (1 without a throughput).
    pub elements: u64,
}

impl Record {
    /// Nanoseconds per element.
    #[must_use]
    pub fn per_element(&self) -> f64 {
        self.ns / self.elements.max(1) as f64
    }
}

/// Where criterion writes: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else `target/criterion`.
#[must_use]
pub fn default_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    target.join("criterion")
}

fn parse(bench: &Value, estimates: &Value) -> Option<Record> {
    let text = |k: &str| bench.get(k).and_then(Value::as_str).map(str::to_owned);
    let elements = bench
        .get("throughput")
        .and_then(|t| t.get("Elements"))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    Some(Record {
        group: text("group_id")?,
        function: text("function_id").unwrap_or_default(),
        value: text("value_str").unwrap_or_default(),
        ns: estimates.get("median")?.get("point_estimate")?.as_f64()?,
        elements,
    })
}

fn walk(dir: &Path, out: &mut Vec<Record>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if !p.is_dir() {
            continue;
        }
        if p.file_name().is_some_and(|n| n == "new") {
            let read = |f: &str| -> Option<Value> {
                serde_json::from_str(&std::fs::read_to_string(p.join(f)).ok()?).ok()
            };
            if let (Some(b), Some(e)) = (read("benchmark.json"), read("estimates.json")) {
                out.extend(parse(&b, &e));
            }
        } else {
            walk(&p, out);
        }
    }
}

/// Every record under `dir`.
#[must_use]
pub fn load(dir: &Path) -> Vec<Record> {
    let mut out = Vec::new();
    walk(dir, &mut out);
    out
}

/// A human time for nanoseconds.
#[must_use]
pub fn time(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} us", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

fn rate(per_second: f64) -> String {
    if per_second >= 1e6 {
        format!("{:.2} M/s", per_second / 1e6)
    } else if per_second >= 1e3 {
        format!("{:.1} k/s", per_second / 1e3)
    } else {
        format!("{per_second:.1} /s")
    }
}

fn mark(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

/// Records of one group: (function, value) -> record.
type Table<'a> = BTreeMap<(&'a str, &'a str), &'a Record>;

fn group<'a>(records: &'a [Record], name: &str) -> Table<'a> {
    records
        .iter()
        .filter(|r| r.group == name)
        .map(|r| ((r.function.as_str(), r.value.as_str()), r))
        .collect()
}

fn num(v: &str) -> u64 {
    v.split('x')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX)
}

fn sorted_values<'a>(t: &Table<'a>) -> Vec<&'a str> {
    let mut v: Vec<&str> = t.keys().map(|(_, v)| *v).collect();
    v.sort_by_key(|v| (num(v), *v));
    v.dedup();
    v
}

/// The ack table: ns per ack, and the ratio to the floor of the same row.
fn ack_table(records: &[Record], out: &mut String) {
    let t = group(records, "ack");
    if t.is_empty() {
        return;
    }
    let cols = [
        ("in_place", "in place (`apply`)"),
        ("in_place_lent", "in place, lent queue (`apply_into`)"),
        ("pure_retained", "pure, every state kept"),
        ("flink_like", "Flink-like (128-bit ids)"),
    ];
    let _ = writeln!(
        out,
        "### Ack throughput (time per ack, ratio to the floor)\n"
    );
    let _ = write!(out, "| tasks | pending | floor (Vec slot + bitset) |");
    for (_, title) in cols {
        let _ = write!(out, " {title} |");
    }
    let _ = write!(out, "\n|---:|---:|---:|");
    for _ in cols {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out);
    let mut targets = Vec::new();
    for v in sorted_values(&t) {
        let (tasks, pending) = v.split_once('x').unwrap_or((v, "?"));
        let floor = t.get(&("floor", v)).map(|r| r.per_element());
        let cell = |f: &str| -> (String, Option<f64>) {
            match (t.get(&(f, v)), floor) {
                (Some(r), Some(fl)) => {
                    let x = r.per_element() / fl;
                    (format!("{} ({x:.1}x)", time(r.per_element())), Some(x))
                }
                (Some(r), None) => (time(r.per_element()), None),
                (None, _) => ("-".into(), None),
            }
        };
        let _ = write!(
            out,
            "| {tasks} | {pending} | {} |",
            floor.map_or("-".into(), time)
        );
        let mut ratios = Vec::new();
        for (f, _) in cols {
            let (c, x) = cell(f);
            ratios.push(x);
            let _ = write!(out, " {c} |");
        }
        let _ = writeln!(out);
        if tasks == "10000" {
            if let [Some(inp), lent, pure, Some(flink)] = ratios[..] {
                targets.push(format!(
                    "- {v}: in place {inp:.1}x floor (target <= 4x: {}; lent queue {}); pure kept {} (target <= 25x: {}); \
                     in place faster than Flink-like ({flink:.1}x): {}; pure kept faster than Flink-like: {}",
                    mark(inp <= 4.0),
                    lent.map_or("-".into(), |l| format!("{l:.1}x")),
                    pure.map_or("-".into(), |p| format!("{p:.1}x")),
                    pure.map_or("-", |p| mark(p <= 25.0)),
                    mark(inp < flink),
                    pure.map_or("-", |p| mark(p < flink)),
                ));
            }
        }
    }
    if !targets.is_empty() {
        let _ = writeln!(out, "\nTargets at 10 000 tasks:\n{}", targets.join("\n"));
    }
    let _ = writeln!(out);
}

/// Least-squares fit `time = a + b * tasks`: (a, b).
#[must_use]
pub fn fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx == 0.0 {
        return None;
    }
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

fn cycle_table(records: &[Record], out: &mut String) {
    let t = group(records, "cycle");
    if t.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Full cycle: trigger -> every ack -> finalize -> store -> notify (in place)\n"
    );
    let _ = writeln!(out, "| tasks | one cycle | per task |\n|---:|---:|---:|");
    let mut points = Vec::new();
    for v in sorted_values(&t) {
        let Some(r) = t.get(&("in_place", v)) else {
            continue;
        };
        let tasks = num(v) as f64;
        points.push((tasks, r.ns));
        let _ = writeln!(out, "| {v} | {} | {} |", time(r.ns), time(r.ns / tasks));
    }
    if let Some((a, b)) = fit(&points) {
        let _ = writeln!(
            out,
            "\nSlope (least squares over the sizes): {} per task, intercept {}.",
            time(b),
            time(a.max(0.0))
        );
    }
    let per = |n: f64| points.iter().find(|p| p.0 == n).map(|p| p.1 / n);
    if let (Some(a), Some(b)) = (per(10_000.0), per(100_000.0)) {
        let _ = writeln!(
            out,
            "Per-task time at 100 000 / at 10 000 tasks: {:.2} (linear: close to 1; <= 1.5: {}; \
             confirm with instruction counts: `profile cycle`).",
            b / a,
            mark(b / a <= 1.5)
        );
    }
    let _ = writeln!(out);
}

fn task_table(records: &[Record], out: &mut String) {
    let t = group(records, "task");
    if t.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Task side: one checkpoint cycle\n");
    let _ = writeln!(
        out,
        "| cycle | in place (`apply`) | cycles/s | pure (`reduce`) | cycles/s |\n|---|---:|---:|---:|---:|"
    );
    let mut values: Vec<&str> = t.keys().map(|(_, v)| *v).collect();
    values.sort_unstable();
    values.dedup();
    for v in values {
        let cell = |f: &str| {
            t.get(&(f, v)).map_or(("-".into(), "-".into()), |r| {
                (time(r.per_element()), rate(1e9 / r.per_element()))
            })
        };
        let (a, ar) = cell("in_place");
        let (b, br) = cell("pure");
        let _ = writeln!(out, "| {v} | {a} | {ar} | {b} | {br} |");
    }
    let _ = writeln!(out);
}

/// One model-checker result (written by the `model` bench).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRow {
    /// What was run (`check fixed`, `check legacy`, the counterexample search).
    pub check: String,
    /// Which configuration.
    pub config: String,
    /// Unique states (0 when not applicable).
    pub unique: u64,
    /// Seconds the state-space search took (the checker's own clock).
    pub search_seconds: f64,
    /// Wall seconds of the whole call (a legacy check includes finding the
    /// shortest counterexample).
    pub total_seconds: f64,
    /// Holds / violated / the counterexample found.
    pub result: String,
}

/// The rows as JSON.
#[must_use]
pub fn model_json(rows: &[ModelRow]) -> String {
    let v: Vec<Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "check": r.check,
                "config": r.config,
                "unique": r.unique,
                "search_seconds": r.search_seconds,
                "total_seconds": r.total_seconds,
                "result": r.result,
            })
        })
        .collect();
    Value::Array(v).to_string()
}

/// Rows from `<dir>/ckpt-model.json`, if the model bench ran.
#[must_use]
pub fn load_model(dir: &Path) -> Vec<ModelRow> {
    let Ok(text) = std::fs::read_to_string(dir.join("ckpt-model.json")) else {
        return Vec::new();
    };
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|i| {
            let s = |k: &str| i.get(k).and_then(Value::as_str).map(str::to_owned);
            let f = |k: &str| i.get(k).and_then(Value::as_f64);
            Some(ModelRow {
                check: s("check")?,
                config: s("config")?,
                unique: i.get("unique").and_then(Value::as_u64)?,
                search_seconds: f("search_seconds")?,
                total_seconds: f("total_seconds")?,
                result: s("result")?,
            })
        })
        .collect()
}

/// The model-checker table, markdown.
#[must_use]
pub fn model_table(rows: &[ModelRow]) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(out, "### Model checker (one thread, DFS with symmetry)\n");
    let _ = writeln!(
        out,
        "| run | configuration | result | unique states | search | states/s | total |\n|---|---|---|---:|---:|---:|---:|"
    );
    for r in rows {
        let (states, per_s) = if r.unique == 0 {
            ("-".to_owned(), "-".to_owned())
        } else {
            (
                r.unique.to_string(),
                rate(r.unique as f64 / r.search_seconds.max(1e-9)),
            )
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {states} | {} | {per_s} | {} |",
            r.check,
            r.config,
            r.result,
            time(r.search_seconds * 1e9),
            time(r.total_seconds * 1e9)
        );
    }
    for r in rows.iter().filter(|r| r.check.contains("counterexample")) {
        let _ = writeln!(
            out,
            "\nLegacy counterexample, {}: {} (target < 1 s: {}).",
            r.config,
            time(r.total_seconds * 1e9),
            mark(r.total_seconds < 1.0 && !r.result.contains("NOT FOUND"))
        );
    }
    let _ = writeln!(out);
    out
}

/// The whole report, markdown.
#[must_use]
pub fn render(records: &[Record], model: &[ModelRow]) -> String {
    let mut out = String::new();
    ack_table(records, &mut out);
    cycle_table(records, &mut out);
    task_table(records, &mut out);
    out.push_str(&model_table(model));
    if out.is_empty() {
        out.push_str("no criterion results found\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(group: &str, function: &str, value: &str, ns: f64, elements: u64) -> Record {
        Record {
            group: group.into(),
            function: function.into(),
            value: value.into(),
            ns,
            elements,
        }
    }

    #[test]
    fn parses_criterion_files() {
        let b: Value = serde_json::from_str(
            r#"{"group_id":"ack","function_id":"floor","value_str":"10000x4","throughput":{"Elements":40000},"full_id":"x","directory_name":"x","title":"x"}"#,
        )
        .unwrap();
        let e: Value = serde_json::from_str(
            r#"{"mean":{"point_estimate":5.0},"median":{"point_estimate":80000.0},"slope":null}"#,
        )
        .unwrap();
        let r = parse(&b, &e).unwrap();
        assert_eq!(r, rec("ack", "floor", "10000x4", 80000.0, 40000));
        assert_eq!(r.per_element(), 2.0);
    }

    #[test]
    fn renders_ratios_slope_and_targets() {
        let records = vec![
            rec("ack", "floor", "10000x1", 20_000.0, 10_000),
            rec("ack", "in_place", "10000x1", 60_000.0, 10_000),
            rec("ack", "in_place_lent", "10000x1", 50_000.0, 10_000),
            rec("ack", "pure_retained", "10000x1", 2_048_000.0, 2_048),
            rec("ack", "flink_like", "10000x1", 400_000.0, 10_000),
            rec("cycle", "in_place", "100", 1_000.0, 100),
            rec("cycle", "in_place", "10000", 100_000.0, 10_000),
            rec("cycle", "in_place", "100000", 1_000_000.0, 100_000),
            rec("task", "in_place", "complete", 500.0, 1),
        ];
        let model = vec![
            ModelRow {
                check: "check fixed".into(),
                config: "default".into(),
                unique: 1000,
                search_seconds: 0.5,
                total_seconds: 0.6,
                result: "holds".into(),
            },
            ModelRow {
                check: "legacy counterexample (shortest, BFS)".into(),
                config: "default".into(),
                unique: 0,
                search_seconds: 0.2,
                total_seconds: 0.2,
                result: "x (9 steps)".into(),
            },
        ];
        let json = model_json(&model);
        let dir = std::env::temp_dir().join(format!("ckpt-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ckpt-model.json"), json).unwrap();
        assert_eq!(load_model(&dir), model);
        std::fs::remove_dir_all(&dir).unwrap();
        let s = render(&records, &model);
        assert!(
            s.contains(
                "| 10000 | 1 | 2.0 ns | 6.0 ns (3.0x) | 5.0 ns (2.5x) | 1.00 us (500.0x) | 40.0 ns (20.0x) |"
            ),
            "{s}"
        );
        assert!(
            s.contains("in place 3.0x floor (target <= 4x: met; lent queue 2.5x)"),
            "{s}"
        );
        assert!(s.contains("|---:|---:|---:|---:|---:|---:|---:|\n"), "{s}");
        assert!(s.contains("(target <= 25x: MISSED)"), "{s}");
        assert!(
            s.contains("Slope (least squares over the sizes): 10.0 ns per task"),
            "{s}"
        );
        assert!(s.contains("2.00 M/s"), "{s}");
        assert!(
            s.contains(
                "| check fixed | default | holds | 1000 | 500.00 ms | 2.0 k/s | 600.00 ms |"
            ),
            "{s}"
        );
        assert!(s.contains("default: 200.00 ms (target < 1 s: met)"), "{s}");
    }
}
