//! Delta debugging over a diverging sequence's events: the shortest
//! sequence (1-minimal: no single event can be dropped) that still shows
//! the same divergence.

use super::compare::{run_sequence, Divergence, FlinkSource, RunError, SeqResult};
use super::event::Sequence;
use super::flink_side::FlinkError;
use super::profile::FlinkProfile;

/// Shrinks `seq`, which diverged as `found`, to a shortest sequence that
/// diverges with the same [`Divergence::signature`]. Candidates that one
/// side cannot take (a stale ack or decline with no earlier attempt: ckpt's
/// side has none to address it to, and the harness refuses the attempt)
/// do not count as reproducing. A task failure for a task that is already
/// terminal is not such a candidate: the harness answers it (`ok: true`,
/// `result.already`) and changes nothing. Returns the shrunk sequence and
/// its run; a JVM crash is an error.
pub fn shrink(
    flink: &mut dyn FlinkSource,
    profile: &FlinkProfile,
    seq: &Sequence,
    found: &Divergence,
    allow: &[String],
) -> Result<(Sequence, SeqResult), RunError> {
    let signature = found.signature();
    let mut test = |events: &[super::event::Event]| -> Result<Option<SeqResult>, RunError> {
        let candidate = Sequence {
            seed: seq.seed,
            config: seq.config.clone(),
            events: events.to_vec(),
        };
        match run_sequence(flink, profile, &candidate, allow) {
            Ok(r)
                if r.divergence.as_ref().map(Divergence::signature) == Some(signature.clone()) =>
            {
                Ok(Some(r))
            }
            Ok(_) | Err(RunError::Side(_)) | Err(RunError::Flink(FlinkError::Refused { .. })) => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    };
    let keep = found.index.min(seq.events.len().saturating_sub(1)) + 1;
    let mut events = seq.events[..keep.min(seq.events.len())].to_vec();
    let Some(mut best) = test(&events)? else {
        // Not reproducible on its own (should not happen: both sides are
        // deterministic); report the original.
        let r = run_sequence(flink, profile, seq, allow)?;
        return Ok((seq.clone(), r));
    };
    let mut n = 2usize;
    while events.len() >= 2 {
        let chunk = events.len().div_ceil(n);
        let mut reduced = false;
        let mut start = 0;
        while start < events.len() {
            let end = (start + chunk).min(events.len());
            let mut candidate = events[..start].to_vec();
            candidate.extend_from_slice(&events[end..]);
            if let Some(r) = test(&candidate)? {
                // Drop what follows the divergence, too.
                let idx = r.divergence.as_ref().map_or(candidate.len(), |d| d.index);
                candidate.truncate((idx + 1).min(candidate.len()));
                events = candidate;
                best = r;
                reduced = true;
                n = (n - 1).max(2);
                break;
            }
            start = end;
        }
        if !reduced {
            if n >= events.len() {
                break;
            }
            n = (n * 2).min(events.len());
        }
    }
    if events.len() == 1 {
        // A single event: also try none (the divergence may be in the end).
        if let Some(r) = test(&[])? {
            events.clear();
            best = r;
        }
    }
    let shrunk = Sequence {
        seed: seq.seed,
        config: seq.config.clone(),
        events,
    };
    // The run of exactly the sequence returned (its lines go to the file).
    let r = run_sequence(flink, profile, &shrunk, allow)?;
    Ok((shrunk, if r.divergence.is_some() { r } else { best }))
}
