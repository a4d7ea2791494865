package ckpt.flink;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.time.Time;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.blob.VoidBlobWriter;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinator;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.runtime.checkpoint.CheckpointFailureManager;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointProperties;
import org.apache.flink.runtime.checkpoint.CheckpointRetentionPolicy;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.StandaloneCheckpointIDCounter;
import org.apache.flink.runtime.checkpoint.StandaloneCheckpointRecoveryFactory;
import org.apache.flink.runtime.checkpoint.StandaloneCompletedCheckpointStore;
import org.apache.flink.runtime.checkpoint.StateObjectCollection;
import org.apache.flink.runtime.checkpoint.TaskStateSnapshot;
import org.apache.flink.runtime.concurrent.ComponentMainThreadExecutor;
import org.apache.flink.runtime.concurrent.ScheduledExecutor;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.executiongraph.ExecutionGraph;
import org.apache.flink.runtime.executiongraph.ExecutionGraphBuilder;
import org.apache.flink.runtime.executiongraph.ExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.ExecutionVertex;
import org.apache.flink.runtime.executiongraph.restart.NoRestartStrategy;
import org.apache.flink.runtime.io.network.partition.JobMasterPartitionTracker;
import org.apache.flink.runtime.io.network.partition.ResultPartitionType;
import org.apache.flink.runtime.jobgraph.DistributionPattern;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.jobgraph.tasks.CheckpointCoordinatorConfiguration;
import org.apache.flink.runtime.jobmaster.slotpool.SlotProvider;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.runtime.scheduler.InternalFailuresListener;
import org.apache.flink.runtime.shuffle.NettyShuffleMaster;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistry;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.memory.MemoryStateBackend;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import org.slf4j.LoggerFactory;

import java.lang.reflect.Constructor;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Flink 1.11 (checked against 1.11.4): the coordinator takes explicit arrays of tasks to trigger,
 * to wait for and to commit to; the MemoryStateBackend is its checkpoint storage; the failure
 * manager has separate job-level and task-level entry points; notify messages carry only the
 * checkpoint id and timestamp.
 */
public final class V1_11 extends Harness {

    @Override
    protected String api() {
        return "gen1";
    }

    @Override
    protected ObjectNode capabilities() {
        ObjectNode c = Json.obj();
        c.put("distinct_trigger_ack_commit", true);
        c.put("trigger_set", "the 'trigger' list (explicit in 1.11's constructor)");
        c.put("finished_tasks", false);
        c.put("fail_unacked", true);
        c.put("fail_next_store", "exception");
        c.put("fail_next_finalize", true);
        c.put("forced_checkpoint", "public triggerCheckpoint(props(forced=true), null, false)");
        c.put("restore_scopes", "all, subtasks, initial, legacy");
        c.put("savepoint_formats", "canonical");
        return c;
    }

    @Override
    protected Config parseConfig(JsonNode c) {
        if (c.has("checkpoints_after_tasks_finish")) {
            throw Refusal.unsupported("checkpoints after tasks finished (FLIP-147) exist from Flink 1.14 on");
        }
        return super.parseConfig(c);
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
            s.tasks.get(e[1]).jobVertex.connectNewDataSetAsInput(
                    s.tasks.get(e[0]).jobVertex, DistributionPattern.ALL_TO_ALL, ResultPartitionType.PIPELINED_BOUNDED);
        }
        for (Task t : s.tasks) {
            jg.addVertex(t.jobVertex);
        }
        s.jobId = jg.getJobID();
        StandaloneCompletedCheckpointStore real = new StandaloneCompletedCheckpointStore(cfg.retained);
        s.realStore = real;
        s.store = wrapStore(s, real);
        org.apache.flink.runtime.checkpoint.CheckpointIDCounter counter =
                wrapCounter(s, new StandaloneCheckpointIDCounter());
        s.counter = counter;

        ExecutionGraph g =
                ExecutionGraphBuilder.buildGraph(
                        null,
                        jg,
                        new Configuration(),
                        s.exec,
                        s.exec,
                        Proxies.of(SlotProvider.class, null),
                        V1_11.class.getClassLoader(),
                        new StandaloneCheckpointRecoveryFactory(),
                        Time.seconds(10),
                        new NoRestartStrategy(),
                        UnregisteredMetricGroups.createUnregisteredJobManagerJobMetricGroup(),
                        VoidBlobWriter.getInstance(),
                        Time.seconds(10),
                        LoggerFactory.getLogger(V1_11.class),
                        NettyShuffleMaster.INSTANCE,
                        Proxies.of(JobMasterPartitionTracker.class, null));
        s.graph = g;
        // What the DefaultScheduler does: the graph leaves failure handling to the scheduler
        // (without this, 1.11's graph runs its legacy failover on every task failure).
        g.enableNgScheduling(
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
        g.start(Proxies.of(ComponentMainThreadExecutor.class, (m, a) -> forwardExec(s, m, a)));
        g.transitionToRunning();
        for (Task t : s.tasks) {
            t.ejv = g.getJobVertex(t.jobVertex.getID());
        }

        CheckpointCoordinatorConfiguration chk =
                new CheckpointCoordinatorConfiguration.CheckpointCoordinatorConfigurationBuilder()
                        .setCheckpointInterval(cfg.interval)
                        .setCheckpointTimeout(cfg.timeout)
                        .setMinPauseBetweenCheckpoints(cfg.minPause)
                        .setMaxConcurrentCheckpoints(cfg.maxConcurrent)
                        .setCheckpointRetentionPolicy(CheckpointRetentionPolicy.valueOf(cfg.retention))
                        .setExactlyOnce(cfg.exactlyOnce)
                        .setPreferCheckpointForRecovery(cfg.preferCheckpoint)
                        .setTolerableCheckpointFailureNumber(cfg.tolerable)
                        .setUnalignedCheckpointsEnabled(cfg.unaligned)
                        .build();

        CheckpointFailureManager fm =
                new CheckpointFailureManager(cfg.tolerable, failJobCallback(s)) {
                    @Override
                    public void handleJobLevelCheckpointException(CheckpointException exception, long checkpointId) {
                        recordFailureManager(s, "handleJobLevelCheckpointException", checkpointId, exception, null);
                        try {
                            super.handleJobLevelCheckpointException(exception, checkpointId);
                        } finally {
                            recordFailureCounter(s);
                        }
                    }

                    @Override
                    public void handleTaskLevelCheckpointException(
                            CheckpointException exception, long checkpointId, ExecutionAttemptID attempt) {
                        recordFailureManager(s, "handleTaskLevelCheckpointException", checkpointId, exception, attempt);
                        try {
                            super.handleTaskLevelCheckpointException(exception, checkpointId, attempt);
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

        StateBackend backend = wrapStorage(s, new MemoryStateBackend());
        s.coord =
                new CheckpointCoordinator(
                        s.jobId,
                        chk,
                        vertices(s, cfg.trigger),
                        vertices(s, cfg.ack),
                        vertices(s, cfg.commit),
                        Collections.emptyList(),
                        counter,
                        s.store,
                        backend,
                        s.exec,
                        Proxies.of(ScheduledExecutor.class, (m, a) -> forwardExec(s, m, a)),
                        SharedStateRegistry.DEFAULT_FACTORY,
                        fm,
                        s.clock);
    }

    private static ExecutionVertex[] vertices(Seq s, java.util.List<Integer> idx) {
        ExecutionVertex[] v = new ExecutionVertex[idx.size()];
        for (int i = 0; i < v.length; i++) {
            v[i] = s.tasks.get(idx.get(i)).ev();
        }
        return v;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void setInvokable(JobVertex v, Class<?> c) {
        v.setInvokableClass((Class) c);
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
        Proxies.invoke(t.current(), "markFinished");
    }

    @Override
    protected CompletableFuture<?> triggerCheckpoint(Seq s, boolean forced) throws Exception {
        if (!forced) {
            return s.coord.triggerCheckpoint(false);
        }
        CheckpointProperties base = (CheckpointProperties) Proxies.field(s.coord, "checkpointProperties");
        Constructor<CheckpointProperties> k =
                CheckpointProperties.class.getDeclaredConstructor(
                        boolean.class, CheckpointType.class, boolean.class, boolean.class, boolean.class,
                        boolean.class, boolean.class);
        k.setAccessible(true);
        CheckpointProperties props =
                k.newInstance(
                        true,
                        base.getCheckpointType(),
                        (Boolean) Proxies.invoke(base, "discardOnSubsumed"),
                        (Boolean) Proxies.invoke(base, "discardOnJobFinished"),
                        (Boolean) Proxies.invoke(base, "discardOnJobCancelled"),
                        (Boolean) Proxies.invoke(base, "discardOnJobFailed"),
                        (Boolean) Proxies.invoke(base, "discardOnJobSuspended"));
        return s.coord.triggerCheckpoint(props, null, false);
    }

    @Override
    protected CompletableFuture<?> triggerPeriodicCall(Seq s) {
        CheckpointProperties props = (CheckpointProperties) Proxies.field(s.coord, "checkpointProperties");
        return s.coord.triggerCheckpoint(props, null, true);
    }

    @Override
    protected CompletableFuture<?> triggerSavepoint(Seq s, String target, boolean sync, boolean terminate, String format) {
        if (!format.equals("canonical")) {
            throw Refusal.unsupported("Flink 1.11 writes canonical savepoints only");
        }
        if (sync) {
            return s.coord.triggerSynchronousSavepoint(terminate, target);
        }
        if (terminate) {
            throw Refusal.bad("terminate needs sync");
        }
        return s.coord.triggerSavepoint(target);
    }

    @Override
    protected TaskStateSnapshot snapshot(Seq s, Task t, RecordingHandle h) {
        TaskStateSnapshot snap = new TaskStateSnapshot();
        OperatorID op = t.jobVertex.getOperatorIDs().get(0).getGeneratedOperatorID();
        snap.putSubtaskStateByOperatorID(
                op,
                new OperatorSubtaskState(
                        new OperatorStreamStateHandle(Collections.emptyMap(), h),
                        null,
                        null,
                        null,
                        StateObjectCollection.empty(),
                        StateObjectCollection.empty()));
        return snap;
    }

    @Override
    protected void shutdown(Seq s, JobStatus status) throws Exception {
        // 1.11's coordinator shuts the store and the id counter down itself.
        s.coord.shutdown(status);
    }

    @Override
    protected void describeOptions(ObjectNode o, CheckpointOptions options) {
        CheckpointType t = options.getCheckpointType();
        o.put("type", t.name());
        o.put("savepoint", t.isSavepoint());
        o.put("sync", t.isSynchronous());
        if (t.isSavepoint()) {
            o.put("post_action", String.valueOf(t.getPostCheckpointAction()));
        }
        o.put("unaligned", options.isUnalignedCheckpoint());
        o.put("exactly_once", options.isExactlyOnceMode());
        o.put("default_location", options.getTargetLocation().isDefaultReference());
    }

    @Override
    protected Exception inconsistentStoreFailure(Exception cause) {
        return null;
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
        if (errorIfNone && !scope.equals("legacy")) {
            throw Refusal.unsupported("in Flink 1.11 only scope 'legacy' (restoreLatestCheckpointedState) takes errorIfNoCheckpoint");
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
            case "legacy":
                {
                    Map<JobVertexID, ExecutionJobVertex> m = new LinkedHashMap<>();
                    for (ExecutionJobVertex v : vs) {
                        m.put(v.getJobVertexId(), v);
                    }
                    o.put("call", "restoreLatestCheckpointedState");
                    o.put("returned", s.coord.restoreLatestCheckpointedState(m, errorIfNone, allowNonRestored));
                    break;
                }
            default:
                throw Refusal.bad("unknown scope " + scope);
        }
        return o;
    }
}
