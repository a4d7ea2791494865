//! The fuzz targets' structure-aware mutator (`ckpt_tests::fuzzing::
//! {story_layout, apply_mutation, cross_stories}`): a mutation of whole
//! actions changes the decoded story by exactly that change, so a mutated
//! long story stays the same long story with one edit.

use ckpt_tests::fuzzing::{
    apply_mutation, cross_stories, story_layout, system_story, task_story, Layout, Mutation,
};

/// xorshift64*: reproducible bytes.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        out.extend_from_slice(&s.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A byte mutator that must not be called.
fn never(_: &mut [u8], _: usize, _: usize) -> usize {
    panic!("a whole-action mutation called the byte mutator")
}

/// Inputs of 600 bytes: about a hundred actions, fewer than the cap, so
/// removing or adding one changes the story by exactly that action.
fn inputs() -> impl Iterator<Item = Vec<u8>> {
    (1..40u64).map(|seed| bytes(seed * 7919, 600))
}

fn layout(target: &str, data: &[u8]) -> Layout {
    let l = story_layout(target, data).expect("a story layout");
    assert!(
        l.actions.len() > 10,
        "{target}: {} actions",
        l.actions.len()
    );
    assert_eq!(l.actions[0].start, l.header);
    for w in l.actions.windows(2) {
        assert_eq!(w[0].end, w[1].start, "{target}: spans not contiguous");
    }
    l
}

#[test]
fn spans_count_the_decoded_actions() {
    for data in inputs() {
        let story = system_story(&data).unwrap();
        assert_eq!(
            layout("system_events", &data).actions.len(),
            story.actions.len()
        );
        let story = task_story(&data).unwrap();
        assert_eq!(
            layout("task_events", &data).actions.len(),
            story.actions.len()
        );
    }
}

#[test]
fn whole_action_mutations_edit_the_story_by_that_action() {
    for (k, data) in inputs().enumerate() {
        let l = layout("system_events", &data);
        let before = system_story(&data).unwrap();
        // The last action may be cut short (decoded with zeros for the
        // missing bytes): the edits below leave it last.
        let n = l.actions.len() - 1;
        let (i, j) = (k * 5 % n, k * 11 % n);
        let mut never = never;
        let mut run = |m| {
            let out = apply_mutation(&data, &l, m, 4096, &mut never);
            system_story(&out).unwrap()
        };

        let mut want = before.actions.clone();
        want.remove(i);
        assert_eq!(run(Mutation::Delete(i)).actions, want, "delete {i}");

        let mut want = before.actions.clone();
        want.insert(j, before.actions[i]);
        assert_eq!(
            run(Mutation::Duplicate(i, j)).actions,
            want,
            "duplicate {i} at {j}"
        );

        let mut want = before.actions.clone();
        want.swap(i, j);
        let after = run(Mutation::Swap(i, j));
        assert_eq!(after.actions, want, "swap {i} {j}");
        assert_eq!(after.spec, before.spec);
    }
}

#[test]
fn a_mutated_action_or_header_leaves_the_rest_alone() {
    for (k, data) in inputs().enumerate() {
        let l = layout("task_events", &data);
        let before = task_story(&data).unwrap();
        let i = k * 3 % l.actions.len();
        // Flip bits of the first byte, keeping the length.
        let mut flip = |b: &mut [u8], size: usize, _max: usize| {
            b[0] ^= 0x5a;
            size
        };
        let out = apply_mutation(&data, &l, Mutation::Action(i), 4096, &mut flip);
        let after = task_story(&out).unwrap();
        assert_eq!(after.actions[..i], before.actions[..i], "prefix before {i}");
        assert_eq!(after.aborted_ids_max, before.aborted_ids_max);

        let out = apply_mutation(&data, &l, Mutation::Header, 4096, &mut flip);
        let after = task_story(&out).unwrap();
        assert_ne!(after.aborted_ids_max, before.aborted_ids_max);
        assert_eq!(
            after.actions, before.actions,
            "header edit changed the actions"
        );
    }
}

#[test]
fn mutations_respect_the_size_limit_at_an_action_boundary() {
    let data = bytes(3, 600);
    let l = layout("system_events", &data);
    let cut = l.actions[20].end;
    let mut never = never;
    let out = apply_mutation(&data, &l, Mutation::Duplicate(0, 0), cut, &mut never);
    assert!(out.len() <= cut);
    let after = system_story(&out).unwrap();
    let before = system_story(&data).unwrap();
    // A copy of action 0 first, then the original actions that fit whole.
    assert_eq!(after.actions[0], before.actions[0]);
    assert_eq!(
        after.actions[1..],
        before.actions[..after.actions.len() - 1]
    );
}

#[test]
fn cross_over_joins_a_prefix_of_one_story_to_a_suffix_of_another() {
    for seed in 1..30u32 {
        let a = bytes(u64::from(seed), 600);
        let b = bytes(u64::from(seed) + 1_000, 600);
        let (sa, sb) = (system_story(&a).unwrap(), system_story(&b).unwrap());
        let mut out = vec![0u8; 4096];
        let n = cross_stories("system_events", &a, &b, &mut out, seed);
        let c = system_story(&out[..n]).unwrap();
        assert_eq!(c.spec, sa.spec);
        // Some prefix of a's actions, then a suffix of b's.
        let k = (0..=c.actions.len())
            .rev()
            .find(|&k| k <= sa.actions.len() && c.actions[..k] == sa.actions[..k])
            .unwrap();
        let rest = &c.actions[k..];
        let tail_ok = (0..=k).any(|back| {
            let joined = &c.actions[k - back..];
            joined.len() <= sb.actions.len() && sb.actions.ends_with(joined)
        }) || rest.is_empty();
        assert!(tail_ok, "seed {seed}: not a prefix of a and a suffix of b");
    }
}
