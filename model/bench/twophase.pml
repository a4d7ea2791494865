/*
 * Gray and Lamport's two-phase commit (TwoPhase, "Consensus on Transaction
 * Commit"), written for SPIN as stateright's examples/2pc.rs and
 * ckpt-model's search/dist/twophase.rs write it, so that SPIN's count of
 * stored states is exactly stateright's unique count: 288 (N=3), 8,832 (5),
 * 296,448 (7), 1,745,408 (8), 10,340,352 (9). model/bench/twophase.sh
 * checks that before it reports a time.
 *
 * How the counts are kept equal:
 *  - one process whose only control point that stores a state is the head
 *    of its `do` loop, and every action of the model one `d_step` (one
 *    indivisible transition, no intermediate state), so a stored state is
 *    the valuation of the variables below and nothing else;
 *  - the message set (which is never emptied) is one flag per message:
 *    Prepared(i), Commit, Abort;
 *  - `heard`, `committed` and `aborted` are counters derived from the
 *    arrays (how many tmPrepared are true, how many RMs are committed,
 *    aborted): functions of the state, so they add bytes to the state
 *    vector but no state; they make the guard "all prepared" and the
 *    invariant one comparison each.
 *
 * The invariant (stateright's `always "consistent"`: no RM aborted while
 * another committed) is an assertion after every step that changes an RM.
 * stateright's two `sometimes` properties are not judged here.
 *
 * N, the number of resource managers (1..9), is given to the C
 * preprocessor: spin -a -DN=7 twophase.pml
 */

#ifndef N
#define N 3
#endif

#define WORKING   0
#define PREPARED  1
#define COMMITTED 2
#define ABORTED   3

#define TM_INIT      0
#define TM_COMMITTED 1
#define TM_ABORTED   2

byte rm[N];              /* each RM's state */
byte tm = TM_INIT;       /* the transaction manager's state */
bool tmPrepared[N];      /* the TM heard RM i prepared */
bool msgPrepared[N];     /* message Prepared(i) sent */
bool msgCommit;          /* message Commit sent */
bool msgAbort;           /* message Abort sent */
byte heard;              /* derived: number of true tmPrepared */
byte committed;          /* derived: number of RMs committed */
byte aborted;            /* derived: number of RMs aborted */

#define CONSISTENT (committed == 0 || aborted == 0)

/* RM i's state becomes s, keeping the derived counters. */
#define SET_RM(i, s) \
	if :: rm[i] == COMMITTED -> committed-- :: else -> skip fi; \
	if :: rm[i] == ABORTED -> aborted-- :: else -> skip fi; \
	rm[i] = s; \
	if :: s == COMMITTED -> committed++ :: else -> skip fi; \
	if :: s == ABORTED -> aborted++ :: else -> skip fi; \
	assert(CONSISTENT)

/* The five actions of resource manager i, in stateright's order. */
#define RM_ACTIONS(i) \
	:: d_step { tm == TM_INIT && msgPrepared[i] -> \
		if :: !tmPrepared[i] -> heard++ :: else -> skip fi; \
		tmPrepared[i] = true } \
	:: d_step { rm[i] == WORKING -> SET_RM(i, PREPARED); msgPrepared[i] = true } \
	:: d_step { rm[i] == WORKING -> SET_RM(i, ABORTED) } \
	:: d_step { msgCommit -> SET_RM(i, COMMITTED) } \
	:: d_step { msgAbort -> SET_RM(i, ABORTED) }

active proctype TwoPhase()
{
	do
	:: d_step { tm == TM_INIT && heard == N -> tm = TM_COMMITTED; msgCommit = true }
	:: d_step { tm == TM_INIT -> tm = TM_ABORTED; msgAbort = true }
	RM_ACTIONS(0)
#if N > 1
	RM_ACTIONS(1)
#endif
#if N > 2
	RM_ACTIONS(2)
#endif
#if N > 3
	RM_ACTIONS(3)
#endif
#if N > 4
	RM_ACTIONS(4)
#endif
#if N > 5
	RM_ACTIONS(5)
#endif
#if N > 6
	RM_ACTIONS(6)
#endif
#if N > 7
	RM_ACTIONS(7)
#endif
#if N > 8
	RM_ACTIONS(8)
#endif
	od
}
