//! What the Explorer shows (`ckpt_model::render::explorer`): a compact state view
//! that names the coordinator's phase and every task, a step view that
//! names the events delivered, a sequence diagram, property names that do
//! not repeat their expectation, and an Explorer address that leads back to
//! `check`'s counterexample.

use std::collections::{HashSet, VecDeque};

use ckpt_core::task::{LegacyBug, Semantics};
use ckpt_model::render::explorer::{state_view, step_view, to_svg};
use ckpt_model::render::replay::Replay;
use ckpt_model::world::{Action, Sim};
use ckpt_model::{shortest_violation, ModelConfig, SysModel, World};
use stateright::Model;

/// Up to `limit` states of `cfg`, breadth first.
fn sample(cfg: &ModelConfig, limit: usize) -> Vec<World> {
    let sim = Sim::new(cfg.clone());
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([sim.init()]);
    let mut out = Vec::new();
    let mut actions = Vec::new();
    while let Some(w) = queue.pop_front() {
        if out.len() >= limit {
            break;
        }
        if !seen.insert(w.clone()) {
            continue;
        }
        actions.clear();
        sim.enabled(&w, &mut actions);
        queue.extend(actions.iter().filter_map(|a| sim.step(&w, *a, None)));
        out.push(w);
    }
    out
}

/// The line bound of the state view for the default configuration.
const MAX_LINES: usize = 20;

#[test]
fn the_state_view_names_the_phase_and_every_task_in_a_few_lines() {
    let cfg = ModelConfig::default();
    let states = sample(&cfg, 20_000);
    assert!(states.len() >= 20_000, "{}", states.len());
    let mut longest = 0;
    let mut debug_longest = 0;
    for w in &states {
        let v = state_view(&cfg, w);
        assert!(
            v.contains("coordinator: running") || v.contains("coordinator: shut down"),
            "{v}"
        );
        for t in 0..cfg.tasks {
            assert!(v.contains(&format!("task {t} (attempt ")), "{v}");
        }
        assert!(!v.contains("CheckpointId("), "{v}");
        longest = longest.max(v.lines().count());
        debug_longest = debug_longest.max(format!("{w:#?}").lines().count());
    }
    assert!(
        longest <= MAX_LINES,
        "{longest} lines, debug {debug_longest}"
    );
    // What the Explorer showed before: the whole Debug dump.
    assert!(debug_longest > 10 * longest, "{debug_longest} vs {longest}");
}

#[test]
fn the_state_view_shows_what_is_in_flight() {
    let cfg = ModelConfig::default();
    let states = sample(&cfg, 5_000);
    let with = |needle: &str| states.iter().any(|w| state_view(&cfg, w).contains(needle));
    for needle in [
        "pending 1 (periodic): awaiting acks",
        "t0 acked",
        "t1 waiting",
        "mailbox: ",
        "write results: 1 ",
        "coordinator -> task 0 (attempt 0): trigger 1",
        "-> coordinator: ack 1",
        "host I/O: allocate an id for request 0",
        "timers: periodic @ ",
        "input from task 0: [barrier 1]",
    ] {
        assert!(with(needle), "no state shows `{needle}`");
    }
}

#[test]
fn a_step_names_the_action_and_the_events_it_delivered() {
    let sim = Sim::new(ModelConfig::default());
    let init = sim.init();
    let mut actions = Vec::new();
    sim.enabled(&init, &mut actions);
    let fire = actions
        .iter()
        .find(|a| matches!(a, Action::Fire(_)))
        .copied()
        .unwrap_or_else(|| panic!("no timer enabled at the start: {actions:?}"));
    let v = step_view(&sim, &init, fire).unwrap_or_else(|| panic!("not enabled"));
    assert!(
        v.starts_with("STEP: coordinator timer Periodic fires"),
        "{v}"
    );
    assert!(v.contains("coordinator <- TimerFired"), "{v}");
    assert!(v.contains("-> AllocateCheckpointId"), "{v}");
    assert!(v.contains("host I/O: allocate an id for request 0"), "{v}");
    // An action that is not enabled has no step.
    assert_eq!(
        step_view(&sim, &init, Action::Mailbox(ckpt_core::TaskId(0))),
        None
    );
}

#[test]
fn property_names_do_not_repeat_their_expectation() {
    let cfg = ModelConfig {
        savepoints: 1,
        task_failures: 1,
        job_failovers: 1,
        ..ModelConfig::default()
    };
    for p in SysModel::new(cfg).properties() {
        for word in ["always", "sometimes", "eventually"] {
            assert!(!p.name.starts_with(word), "{:?} {}", p.expectation, p.name);
        }
    }
}

#[test]
fn the_explorer_address_leads_to_checks_counterexample() {
    let cfg = ModelConfig {
        semantics: Semantics::Legacy(LegacyBug::AbortRemovesResult),
        checkpoints: 1,
        faults: 0,
        ..ModelConfig::default()
    };
    let cx = shortest_violation(&cfg, 1).unwrap_or_else(|| panic!("legacy bug not found"));
    let frag = Replay::new(&cfg, &cx.actions)
        .explorer_fragment()
        .unwrap_or_else(|| panic!("no address"));
    // Follow it the way the Explorer does: the first index picks the
    // initial state, each next one an action among those enabled.
    let model = SysModel::new(cfg.clone());
    let mut parts = frag
        .strip_prefix("#/steps/")
        .unwrap_or_else(|| panic!("{frag}"))
        .split('/')
        .map(|i| i.parse::<usize>().unwrap_or_else(|e| panic!("{i}: {e}")));
    let inits = model.init_states();
    let mut s = inits
        .get(parts.next().unwrap_or(usize::MAX))
        .cloned()
        .unwrap_or_else(|| panic!("no init"));
    let mut followed = Vec::new();
    for i in parts {
        let mut actions = Vec::new();
        model.actions(&s, &mut actions);
        let a = *actions
            .get(i)
            .unwrap_or_else(|| panic!("index {i} out of range"));
        followed.push(a);
        s = model
            .next_state(&s, a)
            .unwrap_or_else(|| panic!("not enabled"));
    }
    assert_eq!(followed, cx.actions);
    assert!(s.violation.is_some(), "the path ends in the violation");
    // An action that is not enabled where the path reaches it: no address.
    let mut bad = cx.actions.clone();
    bad.insert(0, Action::Mailbox(ckpt_core::TaskId(0)));
    assert_eq!(Replay::new(&cfg, &bad).explorer_fragment(), None);

    // The diagram of that path: the lanes that take part, the violation.
    let svg = to_svg(&Replay::new(&cfg, &cx.actions));
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(
        svg.contains("Coordinator") && svg.contains("T1 task"),
        "{svg}"
    );
    assert!(svg.contains("VIOLATION"), "{svg}");
    assert!(!svg.contains("T1 writer"), "an unused lane is drawn: {svg}");
    assert!(!svg.contains("CheckpointId("), "{svg}");
}
