//! A counterexample as a Mermaid sequence diagram (`check --diagram`).

use std::fmt::Write as _;

use crate::render::explorer::{arrows, lanes};
use crate::render::plain::plain_debug;
use crate::render::replay::Replay;

fn mermaid_text(s: &str) -> String {
    let s: String = plain_debug(s)
        .chars()
        .map(|c| match c {
            ';' | '#' | '\n' => ',',
            '{' | '}' => ' ',
            _ => c,
        })
        .collect();
    let s = s.replace("checkpoint: ", "cp ");
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 140 {
        format!("{}...", s.chars().take(137).collect::<String>())
    } else {
        s
    }
}

/// The counterexample as a Mermaid sequence diagram: the coordinator, the
/// host's I/O, and each task's netty / task / writer / async threads as
/// lanes; only the lanes that take part are declared. Each arrow is one
/// checker action, labelled with the steps (events delivered, numbered as
/// `check` and `replay` number them) it caused.
#[must_use]
pub fn to_mermaid(r: &Replay, title: &str) -> String {
    let arrows = arrows(r);
    let mut body = String::new();
    let mut used: Vec<String> = Vec::new();
    let mut use_lane = |l: &str| {
        if !used.iter().any(|u| u == l) {
            used.push(l.to_string());
        }
    };
    for a in &arrows {
        use_lane(&a.from);
        use_lane(&a.to);
        let _ = writeln!(
            body,
            "    {}->>{}: {}. {}",
            a.from,
            a.to,
            a.steps,
            mermaid_text(&a.text)
        );
        for (lane, v) in &a.violations {
            use_lane(lane);
            let _ = writeln!(body, "    Note over {lane}: VIOLATION {}", mermaid_text(v));
        }
    }
    let mut o = String::from("sequenceDiagram\n");
    let _ = writeln!(o, "    title {}", mermaid_text(title));
    for (id, name) in lanes(&r.config) {
        if used.contains(&id) {
            let _ = writeln!(o, "    participant {id} as {name}");
        }
    }
    o.push_str(&body);
    o
}
