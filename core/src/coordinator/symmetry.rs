//! Task-id permutation of a coordinator state, for symmetry reduction in the
//! model checker (`ckpt-model`). Pure bookkeeping over the state's fields; no
//! behaviour.

use super::slots::AckSlot;
use super::state::{Completed, CoordinatorState, TaskStatus};
use crate::types::{AttemptNo, StateHandle, TaskId};

fn renamed(slot: AckSlot, rename: &dyn Fn(StateHandle) -> StateHandle) -> AckSlot {
    match slot {
        AckSlot::Acked(Some(h)) => AckSlot::Acked(Some(rename(h))),
        AckSlot::Acked(None) | AckSlot::Waiting => slot,
    }
}

impl CoordinatorState {
    /// The same state with task `t` renamed to `perm[t]` for every configured
    /// task slot: the task table and every ack slot (pending checkpoints'
    /// attempts and acks, completed checkpoints' handles) move with their
    /// task.
    ///
    /// `rename` maps every state handle to the handle of the renamed task
    /// (handles that encode the task that wrote them must follow it; pass
    /// the identity for opaque handles).
    ///
    /// Returns `None` unless `perm` is a permutation of `0..task_slots()`
    /// that maps each of the configuration's task lists (trigger, wait,
    /// commit) onto itself as a set, so that the (shared, unchanged)
    /// configuration describes the permuted state just as well. Ack slots
    /// follow `tasks_to_wait` order, so slot `s` (task `w[s]`) moves to the
    /// slot of `perm[w[s]]`.
    #[must_use]
    pub fn permute_tasks(
        &self,
        perm: &[TaskId],
        rename: &dyn Fn(StateHandle) -> StateHandle,
    ) -> Option<CoordinatorState> {
        let cfg = &self.cold.config;
        let n = cfg.task_slots();
        if perm.len() != n || self.cold.tasks.len() != n {
            return None;
        }
        let mut seen = vec![false; n];
        for p in perm {
            let slot = seen.get_mut(p.0 as usize)?;
            if *slot {
                return None;
            }
            *slot = true;
        }
        let maps_onto_itself = |list: &[TaskId]| {
            list.iter().all(|t| {
                perm.get(t.0 as usize)
                    .is_some_and(|image| list.contains(image))
            })
        };
        if !maps_onto_itself(&cfg.trigger)
            || !maps_onto_itself(&cfg.wait)
            || !maps_onto_itself(&cfg.commit)
        {
            return None;
        }
        // new_slot[s] = the ack slot that slot s moves to.
        let mut new_slot = Vec::with_capacity(cfg.wait.len());
        for t in &cfg.wait {
            let image = perm.get(t.0 as usize)?;
            new_slot.push(cfg.wait_slot(*image)?);
        }
        let mut next = self.clone();
        let mut tasks: Vec<TaskStatus> = self.cold.tasks.iter().copied().collect();
        for (old, status) in self.cold.tasks.iter().enumerate() {
            let image = perm.get(old)?.0 as usize;
            *tasks.get_mut(image)? = *status;
        }
        next.cold.tasks = tasks.into_iter().collect();
        for p in self.pending.values() {
            let mut q = p.to_record();
            let mut attempts: Vec<AttemptNo> = p.attempts().collect();
            for (s, a) in p.attempts().enumerate() {
                *attempts.get_mut(*new_slot.get(s)?)? = a;
            }
            q.attempts = attempts.into();
            for (s, a) in p.acks().enumerate() {
                q.acks.set(*new_slot.get(s)?, renamed(a, rename))?;
            }
            next.pending.insert(q);
        }
        let move_slots = |c: &Completed| -> Option<Completed> {
            let mut d = c.clone();
            // Restored savepoints may hold any number of handles; only
            // slot-shaped ones move slots.
            let shaped = c.handles.len() == new_slot.len();
            for (s, a) in c.handles.iter().enumerate() {
                let to = if shaped { *new_slot.get(s)? } else { s };
                d.handles.set(to, renamed(a, rename))?;
            }
            Some(d)
        };
        next.cold.completed = self
            .cold
            .completed
            .iter()
            .map(move_slots)
            .collect::<Option<_>>()?;
        next.cold.in_doubt = match &self.cold.in_doubt {
            Some(c) => Some(move_slots(c)?),
            None => None,
        };
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::{reduce, CoordinatorEvent, CoordinatorSettings, Timer};
    use crate::types::{AttemptNo, CheckpointId, JobId, Millis};

    #[test]
    fn permutes_ack_slots_and_rejects_non_symmetries() {
        let s = CoordinatorState::from_settings(CoordinatorSettings::with_tasks(JobId(1), 3))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut s = reduce(&s, Millis(0), CoordinatorEvent::StartScheduler).state;
        s = reduce(
            &s,
            Millis(1_000),
            CoordinatorEvent::TimerFired {
                timer: Timer::Periodic,
            },
        )
        .state;
        let request = s.in_flight().map(|r| r.id()).unwrap_or_else(|| panic!());
        s = reduce(
            &s,
            Millis(1_000),
            CoordinatorEvent::CheckpointIdAllocated {
                request,
                result: Ok(CheckpointId(1)),
            },
        )
        .state;
        s = reduce(
            &s,
            Millis(1_000),
            CoordinatorEvent::Acknowledge {
                job: JobId(1),
                task: TaskId(1),
                attempt: AttemptNo(0),
                checkpoint: CheckpointId(1),
                state: Some(StateHandle(7)),
            },
        )
        .state;
        // Handles name their task here (7 = task 1's, 9 = task 2's).
        let rename = |h: StateHandle| match h.0 {
            7 => StateHandle(9),
            9 => StateHandle(7),
            other => StateHandle(other),
        };
        let swapped = s
            .permute_tasks(&[TaskId(0), TaskId(2), TaskId(1)], &rename)
            .unwrap_or_else(|| panic!("a symmetry"));
        let acks: Vec<_> = swapped
            .pending_checkpoint(CheckpointId(1))
            .map(|p| p.acks().collect())
            .unwrap_or_default();
        assert_eq!(
            acks,
            vec![
                crate::coordinator::AckSlot::Waiting,
                crate::coordinator::AckSlot::Waiting,
                crate::coordinator::AckSlot::Acked(Some(StateHandle(9)))
            ]
        );
        assert_eq!(
            swapped.permute_tasks(&[TaskId(0), TaskId(2), TaskId(1)], &rename),
            Some(s.clone())
        );
        // Moving the source (task 0) is not a symmetry of this config.
        assert_eq!(
            s.permute_tasks(&[TaskId(1), TaskId(0), TaskId(2)], &rename),
            None
        );
        assert_eq!(
            s.permute_tasks(&[TaskId(0), TaskId(0), TaskId(2)], &rename),
            None
        );
        assert_eq!(s.permute_tasks(&[TaskId(0)], &rename), None);
    }
}
