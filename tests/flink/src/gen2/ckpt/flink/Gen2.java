package ckpt.flink;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinator;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.runtime.checkpoint.CheckpointFailureManager;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointProperties;
import org.apache.flink.runtime.checkpoint.CheckpointRetentionPolicy;
import org.apache.flink.runtime.checkpoint.CheckpointStatsTracker;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.CheckpointsCleaner;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStore;
import org.apache.flink.runtime.checkpoint.DefaultCheckpointPlanCalculator;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.PendingCheckpoint;
import org.apache.flink.runtime.checkpoint.PendingCheckpointStats;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.checkpoint.SnapshotType;
import org.apache.flink.runtime.checkpoint.StandaloneCheckpointIDCounter;
import org.apache.flink.runtime.checkpoint.StandaloneCompletedCheckpointStore;
import org.apache.flink.runtime.checkpoint.TaskStateSnapshot;
import org.apache.flink.runtime.checkpoint.VertexFinishedStateChecker;
import org.apache.flink.runtime.concurrent.ComponentMainThreadExecutor;
import org.apache.flink.runtime.executiongraph.DefaultExecutionGraph;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.executiongraph.ExecutionGraphCheckpointPlanCalculatorContext;
import org.apache.flink.runtime.executiongraph.ExecutionJobVertex;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.jobgraph.tasks.CheckpointCoordinatorConfiguration;
import org.apache.flink.runtime.persistence.PossibleInconsistentStateException;
import org.apache.flink.runtime.scheduler.InternalFailuresListener;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.api.common.JobID;
import org.apache.flink.util.concurrent.ScheduledExecutor;

import java.util.Collections;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The API generation of Flink 1.15 and later (checked against 1.20.0 and 2.3.0): a checkpoint
 * plan computed from the execution graph by {@link DefaultCheckpointPlanCalculator} (sources are
 * triggered, every task acknowledges and is committed; finished tasks are skipped), the
 * coordinator constructed on {@link JobManagerCheckpointStorage}, and notify messages that carry
 * {@code lastSubsumed} / {@code latestCompleted}.
 */
public abstract class Gen2 extends Harness {

    /** DefaultExecutionGraphBuilder.buildGraph, whose parameter list differs per version. */
    protected abstract DefaultExecutionGraph buildGraph(
            Seq s, JobGraph jobGraph, CompletedCheckpointStore store, CheckpointsCleaner cleaner,
            org.apache.flink.runtime.checkpoint.CheckpointIDCounter counter) throws Exception;

    protected abstract CheckpointStatsTracker statsTracker(Seq s);

    /** Connects {@code down} to read from {@code up} (ALL_TO_ALL, pipelined). */
    protected abstract void connect(JobVertex down, JobVertex up);

    @Override
    protected String api() {
        return "gen2";
    }

    @Override
    protected ObjectNode capabilities() {
        ObjectNode c = Json.obj();
        c.put("distinct_trigger_ack_commit", false);
        c.put("trigger_set", "sources of the task graph (edges)");
        c.put("finished_tasks", true);
        c.put("fail_unacked", Proxies.methodNamed(CheckpointCoordinator.class, "failUnacknowledgedPendingCheckpointsFor", 2) != null);
        c.put("fail_next_store", "exception, inconsistent");
        c.put("fail_next_finalize", true);
        c.put("forced_checkpoint", "package-private triggerCheckpoint(props(forced=true), null, false)");
        c.put("restore_scopes", "all, subtasks, initial");
        c.put("savepoint_formats", "canonical, native");
        return c;
    }

    @Override
    protected Config parseConfig(org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode c) {
        Config cfg = super.parseConfig(c);
        if (c.has("ack") || c.has("commit")) {
            if (cfg.ack.size() != cfg.tasks || cfg.commit.size() != cfg.tasks) {
                throw Refusal.unsupported(
                        "Flink "
                                + org.apache.flink.runtime.util.EnvironmentInformation.getVersion()
                                + " computes the tasks to wait for and to commit to itself (DefaultCheckpointPlanCalculator):"
                                + " every task; 'ack' and 'commit' must list all tasks or be left out");
            }
        }
        if (c.has("prefer_checkpoint_for_recovery")) {
            throw Refusal.unsupported("prefer_checkpoint_for_recovery exists only in Flink 1.11");
        }
        return cfg;
    }

    @Override
    protected void build(Seq s) throws Exception {
        Config cfg = s.cfg;
        JobGraph jg = new JobGraph("ckpt-harness-" + s.id);
        Class<?> invokable = Class.forName("org.apache.flink.streaming.runtime.tasks.OneInputStreamTask");
        for (int i = 0; i < cfg.tasks; i++) {
            Task t = new Task(i);
            JobVertex v = new JobVertex("t" + i);
            v.setParallelism(1);
            v.setMaxParallelism(128);
            setInvokable(v, invokable);
            t.jobVertex = v;
            s.tasks.add(t);
        }
        for (int[] e : cfg.edges) {
            connect(s.tasks.get(e[1]).jobVertex, s.tasks.get(e[0]).jobVertex);
        }
        for (Task t : s.tasks) {
            jg.addVertex(t.jobVertex);
        }
        // The trigger set Flink will compute: the vertices without inputs.
        for (Task t : s.tasks) {
            boolean source = t.jobVertex.isInputVertex();
            if (source != cfg.trigger.contains(t.index)) {
                throw Refusal.unsupported(
                        "Flink triggers exactly the tasks without inputs; 'trigger' must equal the sources of 'edges'");
            }
        }
        s.jobId = jg.getJobID();
        StandaloneCompletedCheckpointStore real = new StandaloneCompletedCheckpointStore(cfg.retained);
        s.realStore = real;
        s.store = wrapStore(s, real);
        org.apache.flink.runtime.checkpoint.CheckpointIDCounter counter =
                wrapCounter(s, new StandaloneCheckpointIDCounter());
        s.counter = counter;
        CheckpointsCleaner cleaner = new CheckpointsCleaner();
        s.cleaner = cleaner;

        DefaultExecutionGraph g = buildGraph(s, jg, s.store, cleaner, counter);
        s.graph = g;
        g.setInternalTaskFailuresListener(
                Proxies.of(
                        InternalFailuresListener.class,
                        (m, a) -> {
                            ObjectNode o = Json.obj();
                            o.put("listener", m.getName());
                            for (Object x : a) {
                                if (x instanceof ExecutionAttemptID) {
                                    s.rec.putAttempt(o, (ExecutionAttemptID) x);
                                } else if (x instanceof Throwable) {
                                    o.put("message", String.valueOf(((Throwable) x).getMessage()));
                                }
                            }
                            s.rec.scheduler.add(o);
                            return null;
                        }));
        g.start(mainThread(s));
        g.transitionToRunning();
        for (Task t : s.tasks) {
            t.ejv = g.getJobVertex(t.jobVertex.getID());
        }

        CheckpointCoordinatorConfiguration chk =
                CheckpointCoordinatorConfiguration.builder()
                        .setCheckpointInterval(cfg.interval)
                        .setCheckpointTimeout(cfg.timeout)
                        .setMinPauseBetweenCheckpoints(cfg.minPause)
                        .setMaxConcurrentCheckpoints(cfg.maxConcurrent)
                        .setCheckpointRetentionPolicy(CheckpointRetentionPolicy.valueOf(cfg.retention))
                        .setExactlyOnce(cfg.exactlyOnce)
                        .setTolerableCheckpointFailureNumber(cfg.tolerable)
                        .setUnalignedCheckpointsEnabled(cfg.unaligned)
                        .setEnableCheckpointsAfterTasksFinish(cfg.afterFinish)
                        .build();

        CheckpointFailureManager fm =
                new CheckpointFailureManager(cfg.tolerable, failJobCallback(s)) {
                    @Override
                    public void handleCheckpointException(
                            PendingCheckpoint pendingCheckpoint,
                            CheckpointProperties checkpointProperties,
                            CheckpointException exception,
                            ExecutionAttemptID executionAttemptID,
                            JobID job,
                            PendingCheckpointStats pendingCheckpointStats,
                            CheckpointStatsTracker statsTracker) {
                        recordFailureManager(
                                s,
                                "handleCheckpointException",
                                pendingCheckpoint == null ? null : pendingCheckpoint.getCheckpointID(),
                                exception,
                                executionAttemptID);
                        try {
                            super.handleCheckpointException(
                                    pendingCheckpoint, checkpointProperties, exception, executionAttemptID,
                                    job, pendingCheckpointStats, statsTracker);
                        } finally {
                            recordFailureCounter(s);
                        }
                    }

                    @Override
                    public void handleCheckpointSuccess(long checkpointId) {
                        recordFailureManager(s, "handleCheckpointSuccess", checkpointId, null, null);
                        super.handleCheckpointSuccess(checkpointId);
                        recordFailureCounter(s);
                    }
                };
        s.failureManager = fm;

        DefaultCheckpointPlanCalculator plan =
                new DefaultCheckpointPlanCalculator(
                        s.jobId,
                        new ExecutionGraphCheckpointPlanCalculatorContext(g),
                        g.getVerticesTopologically(),
                        cfg.afterFinish);

        s.coord =
                new CheckpointCoordinator(
                        s.jobId,
                        chk,
                        Collections.emptyList(),
                        counter,
                        s.store,
                        wrapStorage(s, new JobManagerCheckpointStorage()),
                        s.exec,
                        cleaner,
                        timer(s),
                        fm,
                        plan,
                        s.clock,
                        statsTracker(s),
                        VertexFinishedStateChecker::new);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void setInvokable(JobVertex v, Class<?> c) {
        v.setInvokableClass((Class) c);
    }

    protected ComponentMainThreadExecutor mainThread(Seq s) {
        return Proxies.of(ComponentMainThreadExecutor.class, (m, a) -> forwardExec(s, m, a));
    }

    protected ScheduledExecutor timer(Seq s) {
        return Proxies.of(ScheduledExecutor.class, (m, a) -> forwardExec(s, m, a));
    }

    static Object forwardExec(Seq s, java.lang.reflect.Method m, Object[] a) throws Throwable {
        switch (m.getName()) {
            case "assertRunningInMainThread":
                return null;
            case "execute":
            case "schedule":
            case "scheduleAtFixedRate":
            case "scheduleWithFixedDelay":
                try {
                    return ManualExecutor.class.getMethod(m.getName(), m.getParameterTypes()).invoke(s.exec, a);
                } catch (java.lang.reflect.InvocationTargetException e) {
                    throw e.getCause();
                }
            default:
                return Proxies.PASS;
        }
    }

    @Override
    protected void resetForNewExecution(Seq s, Task t) {
        t.ev().resetForNewExecution();
    }

    @Override
    protected void markFinished(Seq s, Task t) {
        t.current().markFinished();
    }

    @Override
    protected CompletableFuture<?> triggerCheckpoint(Seq s, boolean forced) throws Exception {
        if (!forced) {
            return s.coord.triggerCheckpoint(false);
        }
        CheckpointProperties base = (CheckpointProperties) Proxies.field(s.coord, "checkpointProperties");
        CheckpointProperties props =
                new CheckpointProperties(
                        true,
                        base.getCheckpointType(),
                        (Boolean) Proxies.invoke(base, "discardOnSubsumed"),
                        (Boolean) Proxies.invoke(base, "discardOnJobFinished"),
                        (Boolean) Proxies.invoke(base, "discardOnJobCancelled"),
                        (Boolean) Proxies.invoke(base, "discardOnJobFailed"),
                        (Boolean) Proxies.invoke(base, "discardOnJobSuspended"),
                        base.isUnclaimed());
        return (CompletableFuture<?>) Proxies.invoke(s.coord, "triggerCheckpoint", props, null, false);
    }

    @Override
    protected CompletableFuture<?> triggerPeriodicCall(Seq s) {
        Object props = Proxies.field(s.coord, "checkpointProperties");
        return (CompletableFuture<?>) Proxies.invoke(s.coord, "triggerCheckpoint", props, null, true);
    }

    @Override
    protected CompletableFuture<?> triggerSavepoint(Seq s, String target, boolean sync, boolean terminate, String format) {
        SavepointFormatType f;
        if (format.equals("canonical")) {
            f = SavepointFormatType.CANONICAL;
        } else if (format.equals("native")) {
            f = SavepointFormatType.NATIVE;
        } else {
            throw Refusal.bad("format is 'canonical' or 'native'");
        }
        if (sync) {
            return s.coord.triggerSynchronousSavepoint(terminate, target, f);
        }
        if (terminate) {
            throw Refusal.bad("terminate needs sync");
        }
        return s.coord.triggerSavepoint(target, f);
    }

    @Override
    protected TaskStateSnapshot snapshot(Seq s, Task t, RecordingHandle h) {
        TaskStateSnapshot snap = new TaskStateSnapshot();
        OperatorID op = t.jobVertex.getOperatorIDs().get(0).getGeneratedOperatorID();
        snap.putSubtaskStateByOperatorID(
                op,
                OperatorSubtaskState.builder()
                        .setManagedOperatorState(new OperatorStreamStateHandle(Collections.emptyMap(), h))
                        .build());
        return snap;
    }

    @Override
    protected void shutdown(Seq s, JobStatus status) throws Exception {
        // What SchedulerBase does when the job reaches a terminal state (or is suspended).
        s.coord.shutdown();
        s.exec.drain();
        s.store.shutdown(status, (CheckpointsCleaner) s.cleaner);
        s.exec.drain();
        s.counter.shutdown(status);
    }

    @Override
    protected void describeOptions(ObjectNode o, CheckpointOptions options) {
        SnapshotType t = options.getCheckpointType();
        o.put("type", t.getName());
        o.put("savepoint", t.isSavepoint());
        if (t instanceof SavepointType) {
            SavepointType sp = (SavepointType) t;
            o.put("sync", sp.isSynchronous());
            o.put("post_action", String.valueOf(sp.getPostCheckpointAction()));
            o.put("format", String.valueOf(sp.getFormatType()));
        } else {
            o.put("sync", false);
            o.put("full", t == CheckpointType.FULL_CHECKPOINT);
        }
        o.put("unaligned", options.isUnalignedCheckpoint());
        o.put("alignment", String.valueOf(options.getAlignment()));
        o.put("exactly_once", options.isExactlyOnceMode());
        o.put("default_location", options.getTargetLocation().isDefaultReference());
    }

    @Override
    protected Exception inconsistentStoreFailure(Exception cause) {
        return new PossibleInconsistentStateException(cause);
    }

    @Override
    protected boolean isSavepointProps(CheckpointProperties p) {
        return p.isSavepoint();
    }

    @Override
    protected ObjectNode restore(
            Seq s, String scope, Set<ExecutionJobVertex> vs, boolean errorIfNone, boolean allowNonRestored)
            throws Exception {
        ObjectNode o = Json.obj();
        if (errorIfNone) {
            throw Refusal.unsupported(
                    "this Flink version's public restore calls never ask for errorIfNoCheckpoint (only restoreSavepoint does)");
        }
        switch (scope) {
            case "all":
                o.put("call", "restoreLatestCheckpointedStateToAll");
                o.put("returned", s.coord.restoreLatestCheckpointedStateToAll(vs, allowNonRestored));
                break;
            case "subtasks":
                {
                    o.put("call", "restoreLatestCheckpointedStateToSubtasks");
                    OptionalLong id = s.coord.restoreLatestCheckpointedStateToSubtasks(vs);
                    if (id.isPresent()) {
                        o.put("returned", id.getAsLong());
                    } else {
                        o.put("returned", (Long) null);
                    }
                    break;
                }
            case "initial":
                o.put("call", "restoreInitialCheckpointIfPresent");
                o.put("returned", s.coord.restoreInitialCheckpointIfPresent(vs));
                break;
            default:
                throw Refusal.unsupported("restore scope '" + scope + "' exists only in Flink 1.11");
        }
        return o;
    }
}
