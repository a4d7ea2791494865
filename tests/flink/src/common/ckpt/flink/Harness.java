package ckpt.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.runtime.checkpoint.CheckpointCoordinator;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.runtime.checkpoint.CheckpointFailureManager;
import org.apache.flink.runtime.checkpoint.CheckpointFailureReason;
import org.apache.flink.runtime.checkpoint.CheckpointIDCounter;
import org.apache.flink.runtime.checkpoint.CheckpointMetrics;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointProperties;
import org.apache.flink.runtime.checkpoint.CompletedCheckpoint;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStore;
import org.apache.flink.runtime.checkpoint.JobManagerTaskRestore;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.PendingCheckpoint;
import org.apache.flink.runtime.checkpoint.TaskStateSnapshot;
import org.apache.flink.runtime.clusterframework.types.AllocationID;
import org.apache.flink.runtime.clusterframework.types.ResourceID;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.Execution;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.executiongraph.ExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.ExecutionVertex;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.jobmanager.scheduler.Locality;
import org.apache.flink.runtime.jobmanager.slots.TaskManagerGateway;
import org.apache.flink.runtime.jobmaster.LogicalSlot;
import org.apache.flink.runtime.jobmaster.SlotRequestId;
import org.apache.flink.runtime.messages.Acknowledge;
import org.apache.flink.runtime.messages.checkpoint.AcknowledgeCheckpoint;
import org.apache.flink.runtime.messages.checkpoint.DeclineCheckpoint;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.taskmanager.TaskManagerLocation;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.util.clock.ManualClock;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * The protocol (see PROTOCOL.md) on top of one real Flink {@link CheckpointCoordinator} per
 * sequence. Everything that is the same in every supported Flink version lives here; each API
 * generation subclasses it and fills in the calls whose signatures differ.
 */
public abstract class Harness {

    public static final int PROTOCOL = 1;
    /** Flink's clocks start here (a real JVM's nano clock is never near zero). */
    public static final long BASE_MS = 1_000_000_000L;

    // ================================================================== version hooks

    /** "gen1" (1.11) or "gen2" (1.20, 2.3). */
    protected abstract String api();

    protected abstract ObjectNode capabilities();

    /** Builds graph, coordinator and services for {@code s.cfg}; sets the fields of {@code s}. */
    protected abstract void build(Seq s) throws Exception;

    /** Creates the next execution attempt of a vertex whose current one is terminal. */
    protected abstract void resetForNewExecution(Seq s, Task t) throws Exception;

    /** Moves a task to FINISHED the way a TaskManager's final state update does. */
    protected abstract void markFinished(Seq s, Task t) throws Exception;

    protected abstract CompletableFuture<?> triggerCheckpoint(Seq s, boolean forced) throws Exception;

    /** The periodic trigger's own call (isPeriodic = true), without the timer. */
    protected abstract CompletableFuture<?> triggerPeriodicCall(Seq s) throws Exception;

    protected abstract CompletableFuture<?> triggerSavepoint(
            Seq s, String target, boolean sync, boolean terminate, String format) throws Exception;

    protected abstract TaskStateSnapshot snapshot(Seq s, Task t, RecordingHandle h);

    protected abstract void shutdown(Seq s, JobStatus status) throws Exception;

    protected abstract void describeOptions(ObjectNode o, CheckpointOptions options);

    /** The exception a store throws when it does not know whether it committed; null if none. */
    protected abstract Exception inconsistentStoreFailure(Exception cause);

    protected abstract boolean isSavepointProps(CheckpointProperties p);

    /** Restores per {@code scope}; returns a JSON description of Flink's answer. */
    protected abstract ObjectNode restore(
            Seq s, String scope, Set<ExecutionJobVertex> vertices, boolean errorIfNone, boolean allowNonRestored)
            throws Exception;

    /** Whether the coordinator has failUnacknowledgedPendingCheckpointsFor (1.11, 1.20; not 2.3). */
    protected boolean hasFailUnacknowledged(Seq s) {
        return Proxies.methodNamed(s.coord.getClass(), "failUnacknowledgedPendingCheckpointsFor", 2) != null;
    }

    // ================================================================== sequence state

    public final class Task {
        public final int index;
        public JobVertex jobVertex;
        public ExecutionJobVertex ejv;
        public final List<ExecutionAttemptID> attempts = new ArrayList<>();

        Task(int index) {
            this.index = index;
        }

        public ExecutionVertex ev() {
            return ejv.getTaskVertices()[0];
        }

        public Execution current() {
            return ev().getCurrentExecutionAttempt();
        }
    }

    public static final class Config {
        public int tasks;
        public List<Integer> trigger;
        public List<Integer> ack;
        public List<Integer> commit;
        public List<int[]> edges;
        public boolean edgesGiven;
        public long interval;
        public long timeout;
        public long minPause;
        public int maxConcurrent;
        public int tolerable;
        public int retained;
        public boolean unaligned;
        public boolean exactlyOnce;
        public boolean afterFinish;
        public boolean preferCheckpoint;
        public String retention;
        public List<Integer> running;
        public long time;
        public boolean startScheduler;
        public JsonNode raw;
    }

    public final class Seq {
        public final int id;
        public final Recorder rec;
        public final ManualClock clock;
        public final ManualExecutor exec;
        public final Config cfg;
        public final Path dir;
        public final List<Task> tasks = new ArrayList<>();
        public JobID jobId;
        public Object graph;
        public CheckpointCoordinator coord;
        public CompletedCheckpointStore realStore;
        public CompletedCheckpointStore store;
        public CheckpointIDCounter counter;
        public CheckpointFailureManager failureManager;
        public Object cleaner;
        public final TaskManagerGateway gateway;
        public final TaskManagerLocation location;

        String failNextStore; // null, "exception", "inconsistent"
        boolean failNextFinalize;
        boolean failNextId;
        /** Master hooks' outstanding trigger futures, by checkpoint id, in hook order. */
        final Map<Long, List<CompletableFuture<Object>>> hookFutures = new TreeMap<>();
        boolean shut;
        final Map<Long, PendingCheckpoint> known = new TreeMap<>();
        final List<Req> requests = new ArrayList<>();
        int nextReq;

        Seq(int id, Config cfg) throws IOException {
            this.id = id;
            this.cfg = cfg;
            this.rec = new Recorder(id);
            this.clock = new ManualClock((BASE_MS + cfg.time) * 1_000_000L);
            this.exec = new ManualExecutor(clock, BASE_MS);
            this.dir = Files.createTempDirectory(tmpRoot, "seq" + id + "-");
            this.gateway = newGateway(this);
            this.location = new TaskManagerLocation(ResourceID.generate(), InetAddress.getLoopbackAddress(), 1);
            exec.setClassifier(
                    t -> t.getClass().getName().contains("ScheduledTrigger") ? "periodic" : "other");
            exec.onUncaught =
                    t -> {
                        ObjectNode o = Json.obj();
                        o.put("where", "executor");
                        o.set("error", describe(t));
                        rec.uncaught.add(o);
                    };
        }

        public long now() {
            return exec.now();
        }

        public Task task(int i) {
            if (i < 0 || i >= tasks.size()) {
                throw Refusal.bad("task " + i + " is not in 0.." + (tasks.size() - 1));
            }
            return tasks.get(i);
        }
    }

    static final class Req {
        final int id;
        final String kind;
        final CompletableFuture<?> future;
        boolean reported;

        Req(int id, String kind, CompletableFuture<?> future) {
            this.id = id;
            this.kind = kind;
            this.future = future;
        }
    }

    protected final Path tmpRoot;
    protected Seq seq;
    private int seqCounter;

    protected Harness() {
        try {
            tmpRoot = Files.createTempDirectory("ckpt-flink-");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(tmpRoot)));
    }

    // ================================================================== fakes

    /** The TaskManager gateway: records every RPC the coordinator sends to a task. */
    private TaskManagerGateway newGateway(Seq s) {
        return Proxies.of(
                TaskManagerGateway.class,
                (m, a) -> {
                    ObjectNode o = Json.obj();
                    String name = m.getName();
                    switch (name) {
                        case "triggerCheckpoint":
                            o.put("rpc", "trigger");
                            s.rec.putAttempt(o, (ExecutionAttemptID) a[0]);
                            o.put("checkpoint", (Long) a[2]);
                            s.rec.putTs(o, "ts", (Long) a[3]);
                            describeOptions(o, (CheckpointOptions) a[4]);
                            break;
                        case "notifyCheckpointComplete": // 1.11: (attempt, job, id, ts)
                        case "notifyCheckpointOnComplete": // 1.15+: (attempt, job, id, ts, lastSubsumed)
                            o.put("rpc", "notify_complete");
                            s.rec.putAttempt(o, (ExecutionAttemptID) a[0]);
                            o.put("checkpoint", (Long) a[2]);
                            s.rec.putTs(o, "ts", (Long) a[3]);
                            if (a.length > 4) {
                                putId(o, "last_subsumed", (Long) a[4]);
                            }
                            break;
                        case "notifyCheckpointAborted":
                            o.put("rpc", "notify_aborted");
                            s.rec.putAttempt(o, (ExecutionAttemptID) a[0]);
                            o.put("checkpoint", (Long) a[2]);
                            if (a.length > 4) { // 1.15+: (attempt, job, id, latestCompleted, ts)
                                putId(o, "latest_completed", (Long) a[3]);
                                s.rec.putTs(o, "ts", (Long) a[4]);
                            } else { // 1.11: (attempt, job, id, ts)
                                s.rec.putTs(o, "ts", (Long) a[3]);
                            }
                            break;
                        case "getAddress":
                            return "harness-taskmanager";
                        default:
                            o.put("rpc", "other");
                            o.put("method", name);
                            if (a != null) {
                                for (Object x : a) {
                                    if (x instanceof ExecutionAttemptID) {
                                        s.rec.putAttempt(o, (ExecutionAttemptID) x);
                                    }
                                }
                            }
                    }
                    s.rec.rpcs.add(o);
                    if (m.getReturnType() == CompletableFuture.class) {
                        return CompletableFuture.completedFuture(Acknowledge.get());
                    }
                    return Proxies.neutral(m.getReturnType());
                });
    }

    private static void putId(ObjectNode o, String f, long v) {
        if (v <= 0) {
            // Flink's ids start at 1; "none" is -1 (INVALID_CHECKPOINT_ID) for lastSubsumed and 0
            // (CompletedCheckpointStore.getLatestCheckpointId of an empty store) for latestCompleted.
            o.put(f, (Long) null);
            o.put(f + "_raw", v);
        } else {
            o.put(f, v);
        }
    }

    /** A slot on the fake TaskManager: hands the coordinator the recording gateway. */
    protected LogicalSlot newSlot(Seq s) {
        final Object[] payload = new Object[1];
        final AllocationID alloc = new AllocationID();
        final SlotRequestId req = new SlotRequestId();
        return Proxies.of(
                LogicalSlot.class,
                (m, a) -> {
                    switch (m.getName()) {
                        case "getTaskManagerGateway":
                            return s.gateway;
                        case "getTaskManagerLocation":
                            return s.location;
                        case "getLocality":
                            return Locality.LOCAL;
                        case "isAlive":
                            return true;
                        case "tryAssignPayload":
                            if (payload[0] != null) {
                                return false;
                            }
                            payload[0] = a[0];
                            return true;
                        case "getPayload":
                            return payload[0];
                        case "releaseSlot":
                            return CompletableFuture.completedFuture(null);
                        case "getAllocationId":
                            return alloc;
                        case "getSlotRequestId":
                            return req;
                        default:
                            return Proxies.PASS;
                    }
                });
    }

    /** The completed-checkpoint store Flink sees: the real one, failing on command. */
    protected CompletedCheckpointStore wrapStore(Seq s, CompletedCheckpointStore real) {
        return Proxies.forward(
                real,
                (m, a) -> {
                    String n = m.getName();
                    if (!(n.equals("addCheckpoint") || n.equals("addCheckpointAndSubsumeOldestOne"))) {
                        if (n.equals("shutdown")) {
                            ObjectNode o = Json.obj();
                            o.put("op", "shutdown");
                            o.put("status", String.valueOf(a[0]));
                            s.rec.storeOps.add(o);
                        }
                        return Proxies.PASS;
                    }
                    CompletedCheckpoint c = (CompletedCheckpoint) a[0];
                    ObjectNode o = Json.obj();
                    o.put("op", "add");
                    o.put("checkpoint", c.getCheckpointID());
                    o.put("savepoint", isSavepointProps(c.getProperties()));
                    s.rec.storeOps.add(o);
                    if (s.failNextStore != null) {
                        String kind = s.failNextStore;
                        s.failNextStore = null;
                        o.put("result", "injected_failure");
                        o.put("failure", kind);
                        Exception cause = new Exception("ckpt harness: injected store failure");
                        throw kind.equals("inconsistent") ? inconsistentStoreFailure(cause) : cause;
                    }
                    List<Long> before = storeIds(s, real);
                    Object ret;
                    try {
                        Method tm = Proxies.findMethod(real.getClass(), n, m.getParameterTypes());
                        tm.setAccessible(true);
                        ret = tm.invoke(real, a);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        o.put("result", "exception");
                        o.set("error", describe(e.getCause()));
                        throw e.getCause();
                    }
                    List<Long> after = storeIds(s, real);
                    ArrayNode removed = o.putArray("removed");
                    for (Long id : before) {
                        if (!after.contains(id)) {
                            removed.add(id);
                        }
                    }
                    o.put("result", "ok");
                    if (ret instanceof CompletedCheckpoint) {
                        o.put("returned_subsumed", ((CompletedCheckpoint) ret).getCheckpointID());
                    }
                    return ret;
                });
    }

    /** The checkpoint id counter Flink sees: the real one, failing on command. */
    protected CheckpointIDCounter wrapCounter(Seq s, CheckpointIDCounter real) {
        return Proxies.forward(
                real,
                (m, a) -> {
                    if (m.getName().equals("getAndIncrement")) {
                        s.rec.markUsed();
                    }
                    if (m.getName().equals("getAndIncrement") && s.failNextId) {
                        s.failNextId = false;
                        ObjectNode o = Json.obj();
                        o.put("op", "allocate_id");
                        o.put("result", "injected_failure");
                        s.rec.storeOps.add(o);
                        throw new Exception("ckpt harness: injected checkpoint id counter failure");
                    }
                    return Proxies.PASS;
                });
    }

    /**
     * The master hooks of the configuration: each answers triggerCheckpoint with a future the
     * client completes with 'hook_done' (null state, so nothing is stored for the hook).
     */
    protected void addMasterHooks(Seq s) {
        int n = (int) Json.optLong(s.cfg.raw, "hooks", 0);
        for (int i = 0; i < n; i++) {
            final String name = "hook" + i;
            org.apache.flink.runtime.checkpoint.MasterTriggerRestoreHook<?> h =
                    Proxies.of(
                            org.apache.flink.runtime.checkpoint.MasterTriggerRestoreHook.class,
                            (m, a) -> {
                                switch (m.getName()) {
                                    case "getIdentifier":
                                        return name;
                                    case "triggerCheckpoint":
                                        {
                                            CompletableFuture<Object> f = new CompletableFuture<>();
                                            s.hookFutures.computeIfAbsent((Long) a[0], k -> new ArrayList<>()).add(f);
                                            ObjectNode o = Json.obj();
                                            o.put("rpc", "master_hook");
                                            o.put("hook", name);
                                            o.put("checkpoint", (Long) a[0]);
                                            s.rec.putTs(o, "ts", (Long) a[1]);
                                            s.rec.rpcs.add(o);
                                            return f;
                                        }
                                    case "createCheckpointDataSerializer":
                                        return null;
                                    default:
                                        return Proxies.PASS;
                                }
                            });
            s.coord.addMasterHook(h);
        }
    }

    private void hookDone(Seq s, JsonNode c, ObjectNode r) {
        long id = Json.reqLong(c, "checkpoint");
        List<CompletableFuture<Object>> fs = s.hookFutures.get(id);
        if (fs == null || fs.stream().allMatch(CompletableFuture::isDone)) {
            throw new Refusal("sequence_state", "no master hook waits for checkpoint " + id);
        }
        int which = (int) Json.optLong(c, "hook", -1);
        boolean ok = Json.optBool(c, "ok", true);
        int n = 0;
        for (int i = 0; i < fs.size(); i++) {
            if ((which < 0 || which == i) && !fs.get(i).isDone()) {
                if (ok) {
                    fs.get(i).complete(null);
                } else {
                    fs.get(i).completeExceptionally(new Exception("ckpt harness: master hook failed"));
                }
                n++;
            }
        }
        r.put("completed_hooks", n);
    }

    /** The checkpoint storage Flink sees: the real one, whose metadata write fails on command. */
    protected <T> T wrapStorage(Seq s, Object real) {
        return Proxies.forward(
                real,
                (m, a) -> {
                    if (!m.getName().equals("createCheckpointStorage")) {
                        return Proxies.PASS;
                    }
                    Object access = Proxies.invoke(real, "createCheckpointStorage", a);
                    return Proxies.forward(access, (m2, a2) -> wrapLocation(s, access, m2, a2));
                });
    }

    private Object wrapLocation(Seq s, Object access, Method m, Object[] a) throws Throwable {
        String n = m.getName();
        if (!(n.equals("initializeLocationForCheckpoint") || n.equals("initializeLocationForSavepoint"))) {
            return Proxies.PASS;
        }
        Object loc;
        try {
            Method tm = Proxies.findMethod(access.getClass(), n, m.getParameterTypes());
            tm.setAccessible(true);
            loc = tm.invoke(access, a);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
        final long id = (Long) a[0];
        return Proxies.forward(
                loc,
                (m3, a3) -> {
                    if (m3.getName().equals("createMetadataOutputStream") && s.failNextFinalize) {
                        s.failNextFinalize = false;
                        ObjectNode o = Json.obj();
                        o.put("op", "finalize");
                        o.put("checkpoint", id);
                        o.put("result", "injected_failure");
                        s.rec.storeOps.add(o);
                        throw new IOException("ckpt harness: injected metadata (finalize) failure");
                    }
                    return Proxies.PASS;
                });
    }

    /** The fail-job callback of the failure manager: records Flink's decision to fail the job. */
    protected CheckpointFailureManager.FailJobCallback failJobCallback(Seq s) {
        return new CheckpointFailureManager.FailJobCallback() {
            @Override
            public void failJob(Throwable cause) {
                ObjectNode o = Json.obj();
                o.put("call", "failJob");
                o.put("message", String.valueOf(cause.getMessage()));
                s.rec.failJob.add(o);
            }

            @Override
            public void failJobDueToTaskFailure(Throwable cause, ExecutionAttemptID failingTask) {
                ObjectNode o = Json.obj();
                o.put("call", "failJobDueToTaskFailure");
                s.rec.putAttempt(o, failingTask);
                o.put("message", String.valueOf(cause.getMessage()));
                s.rec.failJob.add(o);
            }
        };
    }

    /** Records one call into the failure manager (the subclass calls this, then super). */
    protected void recordFailureManager(Seq s, String method, Long checkpoint, CheckpointException e, ExecutionAttemptID a) {
        ObjectNode o = Json.obj();
        o.put("method", method);
        if (checkpoint == null || checkpoint < 0) {
            o.put("checkpoint", (Long) null);
        } else {
            o.put("checkpoint", checkpoint);
        }
        if (e != null) {
            o.put("reason", e.getCheckpointFailureReason().name());
        }
        if (a != null) {
            s.rec.putAttempt(o, a);
        }
        s.rec.failureManager.add(o);
    }

    /** Called by the subclass after super returned: the counter as Flink left it. */
    protected void recordFailureCounter(Seq s) {
        int n = s.rec.failureManager.size();
        if (n > 0) {
            ((ObjectNode) s.rec.failureManager.get(n - 1)).put("counter_after", failureCounter(s));
        }
    }

    protected int failureCounter(Seq s) {
        Object c = Proxies.field(s.failureManager, "continuousFailureCounter");
        return ((java.util.concurrent.atomic.AtomicInteger) c).get();
    }

    // ================================================================== graph helpers

    /** Puts a freshly created attempt on a slot, registers it, and moves it to {@code target}. */
    protected void deploy(Seq s, Task t, ExecutionState target) {
        Execution e = t.current();
        if (!e.tryAssignResource(newSlot(s))) {
            throw new IllegalStateException("could not assign a slot to task " + t.index);
        }
        register(s, t);
        if (target != ExecutionState.CREATED) {
            e.transitionState(target);
        }
    }

    protected void register(Seq s, Task t) {
        Execution e = t.current();
        if (!t.attempts.contains(e.getAttemptId())) {
            t.attempts.add(e.getAttemptId());
        }
        s.rec.registerAttempt(e.getAttemptId(), t.index, e.getAttemptNumber());
    }

    // ================================================================== protocol

    /** Whether a sequence was begun and not ended (reported in the bye line). */
    public boolean sequenceOpen() {
        return seq != null;
    }

    public ObjectNode hello() {
        ObjectNode o = Json.obj();
        o.put("type", "hello");
        o.put("protocol", PROTOCOL);
        o.put("flink", org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        o.put("api", api());
        o.put("java", System.getProperty("java.version"));
        o.set("capabilities", capabilities());
        return o;
    }

    public ObjectNode handle(JsonNode c) {
        ObjectNode resp = Json.obj();
        resp.put("type", "response");
        String cmd = c.path("cmd").asText("");
        resp.put("cmd", cmd);
        if (c.has("tag")) {
            resp.set("tag", c.get("tag"));
        }
        Seq s = seq;
        boolean bracket = s != null && !cmd.equals("advance"); // advance brackets each step itself
        if (s != null) {
            s.rec.reset();
            if (bracket) {
                s.rec.openTs(s.now());
            }
        }
        ObjectNode result = Json.obj();
        try {
            if (cmd.equals("begin")) {
                begin(c, result);
                s = seq;
            } else if (cmd.equals("ping")) {
                result.put("pong", true);
            } else {
                if (!COMMANDS.contains(cmd)) {
                    throw Refusal.bad("unknown command '" + cmd + "'");
                }
                if (s == null) {
                    throw new Refusal("no_sequence", "'" + cmd + "' needs a sequence: send 'begin' first");
                }
                dispatch(s, cmd, c, result);
                s.exec.drain();
            }
            resp.put("ok", true);
        } catch (Refusal r) {
            resp.put("ok", false);
            ObjectNode e = resp.putObject("error");
            e.put("kind", r.kind);
            e.put("message", r.getMessage());
        } catch (VirtualMachineError t) {
            throw t;
        } catch (Throwable t) {
            resp.put("ok", false);
            ObjectNode e = describe(t);
            e.put("kind", "flink_exception");
            resp.set("error", e);
            if (s != null) {
                try {
                    s.exec.drain();
                } catch (Throwable t2) {
                    ObjectNode u = Json.obj();
                    u.put("where", "drain after exception");
                    u.set("error", describe(t2));
                    s.rec.uncaught.add(u);
                }
            }
        } finally {
            if (s != null && bracket) {
                s.rec.closeTs();
            }
        }
        resp.set("result", result);
        if (s != null) {
            collect(s, resp, cmd.equals("end"));
        }
        return resp;
    }

    static final Set<String> COMMANDS =
            new HashSet<>(
                    List.of(
                            "trigger", "ack", "decline", "advance", "task_failed", "task_running", "task_state",
                            "task_finished", "restart", "stop_scheduler", "start_scheduler", "abort_pending",
                            "shutdown", "fail_next_store", "fail_next_finalize", "fail_next_id", "hook_done",
                            "restore_latest", "state", "end"));

    private void dispatch(Seq s, String cmd, JsonNode c, ObjectNode r) throws Exception {
        switch (cmd) {
            case "trigger":
                trigger(s, c, r);
                break;
            case "ack":
                ack(s, c, r);
                break;
            case "decline":
                decline(s, c, r);
                break;
            case "advance":
                advance(s, c, r);
                break;
            case "task_failed":
                taskFailed(s, c, r);
                break;
            case "task_running":
                taskRunning(s, c, r);
                break;
            case "task_state":
                taskState(s, c, r);
                break;
            case "task_finished":
                taskFinished(s, c, r);
                break;
            case "restart":
                restart(s, c, r);
                break;
            case "stop_scheduler":
                s.coord.stopCheckpointScheduler();
                break;
            case "start_scheduler":
                s.coord.startCheckpointScheduler();
                break;
            case "abort_pending":
                {
                    CheckpointFailureReason reason = flinkReason(Json.optStr(c, "reason", "JOB_FAILOVER_REGION"));
                    s.coord.abortPendingCheckpoints(new CheckpointException(reason));
                    break;
                }
            case "shutdown":
                {
                    JobStatus st = jobStatus(Json.optStr(c, "status", "FAILED"));
                    if (s.shut) {
                        throw new Refusal("sequence_state", "the coordinator is already shut down");
                    }
                    s.shut = true;
                    shutdown(s, st);
                    break;
                }
            case "fail_next_store":
                {
                    String kind = Json.optStr(c, "kind", "exception");
                    if (!kind.equals("exception") && !kind.equals("inconsistent")) {
                        throw Refusal.bad("fail_next_store kind is 'exception' or 'inconsistent'");
                    }
                    if (kind.equals("inconsistent") && inconsistentStoreFailure(new Exception()) == null) {
                        throw Refusal.unsupported(
                                "this Flink version has no PossibleInconsistentStateException");
                    }
                    s.failNextStore = kind;
                    break;
                }
            case "fail_next_finalize":
                s.failNextFinalize = true;
                break;
            case "fail_next_id":
                s.failNextId = true;
                break;
            case "hook_done":
                hookDone(s, c, r);
                break;
            case "restore_latest":
                restoreLatest(s, c, r);
                break;
            case "state":
                break;
            case "end":
                end(s, r);
                break;
            default:
                throw Refusal.bad("unknown command '" + cmd + "'");
        }
    }

    // ------------------------------------------------------------------ begin / end

    private void begin(JsonNode c, ObjectNode r) throws Exception {
        if (seq != null) {
            throw new Refusal("sequence_state", "a sequence is active: send 'end' first");
        }
        Config cfg = parseConfig(c);
        Seq s = new Seq(++seqCounter, cfg);
        RecordingHandle.sink = s.rec;
        s.rec.openTs(s.now());
        try {
            build(s);
            addMasterHooks(s);
            s.exec.drain();
            for (Task t : s.tasks) {
                register(s, t);
            }
            Set<Integer> running = new HashSet<>(cfg.running);
            for (Task t : s.tasks) {
                deploy(s, t, running.contains(t.index) ? ExecutionState.RUNNING : ExecutionState.CREATED);
            }
            s.exec.drain();
            if (cfg.startScheduler) {
                s.coord.startCheckpointScheduler();
                s.exec.drain();
            }
        } catch (Throwable t) {
            deleteTree(s.dir);
            RecordingHandle.sink = null;
            throw t;
        } finally {
            s.rec.closeTs();
        }
        seq = s;
        r.put("sequence", s.id);
        r.put("job", s.jobId.toString());
        ArrayNode ts = r.putArray("tasks");
        for (Task t : s.tasks) {
            ObjectNode o = ts.addObject();
            o.put("task", t.index);
            o.put("vertex", t.jobVertex.getID().toString());
            o.put("name", t.jobVertex.getName());
            ArrayNode in = o.putArray("inputs");
            for (int[] e : cfg.edges) {
                if (e[1] == t.index) {
                    in.add(e[0]);
                }
            }
        }
    }

    protected Config parseConfig(JsonNode c) {
        Config cfg = new Config();
        cfg.raw = c;
        cfg.tasks = (int) Json.reqLong(c, "tasks");
        if (cfg.tasks < 1 || cfg.tasks > 64) {
            throw Refusal.bad("tasks must be in 1..64");
        }
        cfg.trigger = Json.optInts(c, "trigger");
        cfg.ack = Json.optInts(c, "ack");
        cfg.commit = Json.optInts(c, "commit");
        cfg.interval = Json.optLong(c, "interval", 1000);
        cfg.timeout = Json.optLong(c, "timeout", 10_000);
        cfg.minPause = Json.optLong(c, "min_pause", 0);
        cfg.maxConcurrent = (int) Json.optLong(c, "max_concurrent", 1);
        cfg.tolerable = (int) Json.optLong(c, "tolerable_failures", 0);
        cfg.retained = (int) Json.optLong(c, "retained", 1);
        cfg.unaligned = Json.optBool(c, "unaligned", false);
        cfg.exactlyOnce = Json.optBool(c, "exactly_once", true);
        cfg.afterFinish = Json.optBool(c, "checkpoints_after_tasks_finish", true);
        cfg.preferCheckpoint = Json.optBool(c, "prefer_checkpoint_for_recovery", false);
        cfg.retention = Json.optStr(c, "retention", "NEVER_RETAIN_AFTER_TERMINATION");
        cfg.time = Json.optLong(c, "time", 0);
        if (cfg.time < 0) {
            throw Refusal.bad("time must be >= 0");
        }
        cfg.startScheduler = Json.optBool(c, "start_scheduler", false);
        List<Integer> all = new ArrayList<>();
        for (int i = 0; i < cfg.tasks; i++) {
            all.add(i);
        }
        for (String f : new String[] {"trigger", "ack", "commit", "running"}) {
            List<Integer> l = Json.optInts(c, f);
            if (l == null) {
                continue;
            }
            for (int i : l) {
                if (i < 0 || i >= cfg.tasks) {
                    throw Refusal.bad(f + " names task " + i + ", not in 0.." + (cfg.tasks - 1));
                }
            }
            if (new HashSet<>(l).size() != l.size()) {
                throw Refusal.bad(f + " names a task twice");
            }
        }
        List<Integer> run = Json.optInts(c, "running");
        cfg.running = run == null ? all : run;
        JsonNode edges = c.get("edges");
        cfg.edges = new ArrayList<>();
        if (edges != null && !edges.isNull()) {
            cfg.edgesGiven = true;
            for (JsonNode e : edges) {
                if (!e.isArray() || e.size() != 2) {
                    throw Refusal.bad("edges are [from, to] pairs");
                }
                int a = e.get(0).asInt(), b = e.get(1).asInt();
                if (a < 0 || b < 0 || a >= cfg.tasks || b >= cfg.tasks || a >= b) {
                    throw Refusal.bad("edge [" + a + "," + b + "]: tasks in range, from < to (the graph must be acyclic)");
                }
                cfg.edges.add(new int[] {a, b});
            }
            Set<Integer> sources = new LinkedHashSet<>(all);
            for (int[] e : cfg.edges) {
                sources.remove(e[1]);
            }
            if (cfg.trigger == null) {
                cfg.trigger = new ArrayList<>(sources);
            }
        } else {
            if (cfg.trigger == null) {
                cfg.trigger = List.of(0);
            }
            // Every task that is not triggered reads from every triggered one.
            for (int b = 0; b < cfg.tasks; b++) {
                if (!cfg.trigger.contains(b)) {
                    for (int a : cfg.trigger) {
                        cfg.edges.add(new int[] {a, b});
                    }
                }
            }
        }
        if (cfg.trigger.isEmpty()) {
            throw Refusal.bad("trigger must name at least one task");
        }
        if (cfg.ack == null) {
            cfg.ack = all;
        }
        if (cfg.commit == null) {
            cfg.commit = all;
        }
        return cfg;
    }

    private void end(Seq s, ObjectNode r) throws Exception {
        if (!s.shut) {
            s.shut = true;
            try {
                shutdown(s, JobStatus.CANCELED);
                s.exec.drain();
            } catch (Throwable t) {
                r.set("shutdown_error", describe(t));
            }
        }
        r.put("sequence", s.id);
    }

    /** After 'end' was answered. */
    private void finishEnd(Seq s) {
        RecordingHandle.sink = null;
        deleteTree(s.dir);
        seq = null;
    }

    // ------------------------------------------------------------------ trigger

    private void trigger(Seq s, JsonNode c, ObjectNode r) throws Exception {
        String kind = Json.optStr(c, "kind", "checkpoint");
        CompletableFuture<?> f;
        switch (kind) {
            case "checkpoint":
                f = triggerCheckpoint(s, Json.optBool(c, "forced", false));
                break;
            case "periodic":
                {
                    String via = Json.optStr(c, "via", "timer");
                    if (via.equals("timer")) {
                        ManualExecutor.Timer t = null;
                        for (ManualExecutor.Timer x : s.exec.armedTimers()) {
                            if (x.kind().equals("periodic")) {
                                t = x;
                                break;
                            }
                        }
                        if (t == null) {
                            throw new Refusal(
                                    "sequence_state",
                                    "no periodic timer is armed (use via=call to make the periodic call anyway)");
                        }
                        r.put("timer_at", t.dueRelative());
                        s.exec.fireNow(t);
                        return; // the periodic trigger drops its future
                    } else if (via.equals("call")) {
                        f = triggerPeriodicCall(s);
                    } else {
                        throw Refusal.bad("via is 'timer' or 'call'");
                    }
                    break;
                }
            case "savepoint":
                {
                    String target = Json.optStr(c, "target", s.dir.resolve("savepoints").toUri().toString());
                    f =
                            triggerSavepoint(
                                    s,
                                    target,
                                    Json.optBool(c, "sync", false),
                                    Json.optBool(c, "terminate", false),
                                    Json.optStr(c, "format", "canonical"));
                    break;
                }
            default:
                throw Refusal.bad("trigger kind is 'checkpoint', 'periodic' or 'savepoint'");
        }
        Req q = new Req(++s.nextReq, kind, f);
        s.requests.add(q);
        r.put("request", q.id);
    }

    // ------------------------------------------------------------------ ack / decline

    private ExecutionAttemptID attemptOf(Seq s, Task t, JsonNode c) {
        if (!c.has("attempt") || c.get("attempt").isNull()) {
            return t.current().getAttemptId();
        }
        long a = Json.reqLong(c, "attempt");
        for (ExecutionAttemptID id : t.attempts) {
            int[] ta = s.rec.attempt(id);
            if (ta != null && ta[1] == a) {
                return id;
            }
        }
        throw Refusal.bad("task " + t.index + " has no attempt " + a);
    }

    private JobID jobOf(Seq s, JsonNode c) {
        return Json.optBool(c, "wrong_job", false) ? new JobID() : s.jobId;
    }

    private void ack(Seq s, JsonNode c, ObjectNode r) throws Exception {
        Task t = s.task((int) Json.reqLong(c, "task"));
        long id = Json.reqLong(c, "checkpoint");
        ExecutionAttemptID a = attemptOf(s, t, c);
        JsonNode st = c.get("state");
        AcknowledgeCheckpoint msg;
        if (st == null || st.isNull()) {
            msg = new AcknowledgeCheckpoint(jobOf(s, c), a, id);
        } else {
            if (!st.canConvertToLong()) {
                throw Refusal.bad("state is a handle number or null");
            }
            TaskStateSnapshot snap = snapshot(s, t, new RecordingHandle(st.asLong(), s.id));
            msg = new AcknowledgeCheckpoint(jobOf(s, c), a, id, new CheckpointMetrics(), snap);
        }
        r.put("ack_class", ackClass(s, id, a, msg.getJob()));
        boolean accepted = s.coord.receiveAcknowledgeMessage(msg, "harness");
        r.put("accepted", accepted);
    }

    /**
     * Which branch of the coordinator an ack takes, read from Flink's own pending checkpoint just
     * before the call (PendingCheckpoint.acknowledgeTask's SUCCESS / DUPLICATE / UNKNOWN /
     * DISCARDED, or the coordinator's late / unknown-checkpoint / wrong-job paths).
     */
    private String ackClass(Seq s, long id, ExecutionAttemptID a, JobID job) {
        if (s.coord.isShutdown()) {
            return "shutdown";
        }
        if (!job.equals(s.jobId)) {
            return "wrong_job";
        }
        PendingCheckpoint p = s.coord.getPendingCheckpoints().get(id);
        if (p == null) {
            return "no_pending";
        }
        if ((Boolean) Proxies.field(p, Proxies.hasField(p, "disposed") ? "disposed" : "discarded")) {
            return "discarded";
        }
        @SuppressWarnings("unchecked")
        Map<ExecutionAttemptID, ?> na = (Map<ExecutionAttemptID, ?>) Proxies.field(p, "notYetAcknowledgedTasks");
        if (na.containsKey(a)) {
            return "success";
        }
        // Not isAcknowledgedBy: that is "not waiting for it" (!notYetAcknowledged.containsKey).
        @SuppressWarnings("unchecked")
        Set<ExecutionAttemptID> acked = (Set<ExecutionAttemptID>) Proxies.field(p, "acknowledgedTasks");
        return acked.contains(a) ? "duplicate" : "unknown";
    }

    /** ckpt's DeclineReason names with a Flink counterpart; see PROTOCOL.md for the others. */
    static final Map<String, String> DECLINE_MAP = new LinkedHashMap<>();

    static {
        DECLINE_MAP.put("TaskNotReady", "CHECKPOINT_DECLINED_TASK_NOT_READY");
        DECLINE_MAP.put("TaskClosing", "CHECKPOINT_DECLINED_TASK_CLOSING");
        DECLINE_MAP.put("Subsumed", "CHECKPOINT_DECLINED_SUBSUMED");
        DECLINE_MAP.put("CancelledOnBarrier", "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER");
        DECLINE_MAP.put("WriterFailed", "CHECKPOINT_ASYNC_EXCEPTION");
        DECLINE_MAP.put("SnapshotFailed", "CHECKPOINT_ASYNC_EXCEPTION");
    }

    static final Map<String, String> NO_COUNTERPART = new LinkedHashMap<>();

    static {
        NO_COUNTERPART.put(
                "AbortedByCoordinator",
                "a Flink task told that a checkpoint was aborted does not decline it: it skips the snapshot and"
                        + " broadcasts a CancelCheckpointMarker (downstream tasks then decline with"
                        + " CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER)");
        NO_COUNTERPART.put(
                "WriteResultMissing",
                "Flink's ChannelStateWriterImpl.getAndRemoveWriteResult throws for a missing result; the task"
                        + " fails (no decline is sent)");
    }

    protected CheckpointFailureReason flinkReason(String name) {
        String n = DECLINE_MAP.getOrDefault(name, name);
        if (NO_COUNTERPART.containsKey(name)) {
            throw Refusal.unsupported("decline reason " + name + " has no Flink counterpart: " + NO_COUNTERPART.get(name));
        }
        try {
            return CheckpointFailureReason.valueOf(n);
        } catch (IllegalArgumentException e) {
            throw Refusal.unsupported("CheckpointFailureReason " + n + " does not exist in this Flink version");
        }
    }

    private void decline(Seq s, JsonNode c, ObjectNode r) throws Exception {
        Task t = s.task((int) Json.reqLong(c, "task"));
        long id = Json.reqLong(c, "checkpoint");
        ExecutionAttemptID a = attemptOf(s, t, c);
        String name = Json.optStr(c, "reason", "CHECKPOINT_DECLINED");
        CheckpointFailureReason reason = flinkReason(name);
        r.put("flink_reason", reason.name());
        DeclineCheckpoint msg =
                new DeclineCheckpoint(
                        jobOf(s, c), a, id, new CheckpointException("declined by the ckpt harness", reason));
        s.coord.receiveDeclineMessage(msg, "harness");
    }

    // ------------------------------------------------------------------ time

    private void advance(Seq s, JsonNode c, ObjectNode r) {
        long target;
        if (c.has("to")) {
            target = Json.reqLong(c, "to");
        } else {
            target = s.now() + Json.reqLong(c, "ms");
        }
        if (target < s.now()) {
            throw Refusal.bad("time only moves forward (now " + s.now() + ", asked " + target + ")");
        }
        ArrayNode fired = r.putArray("fired");
        s.exec.advanceTo(
                target,
                new ManualExecutor.FireListener() {
                    @Override
                    public void before(ManualExecutor.Timer t) {
                        fired.add(describeTimer(s, t));
                    }

                    @Override
                    public void after(ManualExecutor.Timer t) {}
                },
                new ManualExecutor.Bracket() {
                    @Override
                    public void open(long relNow) {
                        s.rec.openTs(relNow);
                    }

                    @Override
                    public void close() {
                        s.rec.closeTs();
                    }
                });
    }

    private ObjectNode describeTimer(Seq s, ManualExecutor.Timer t) {
        ObjectNode o = Json.obj();
        String kind = t.kind();
        for (Map.Entry<Long, PendingCheckpoint> e : s.coord.getPendingCheckpoints().entrySet()) {
            Object h = Proxies.field(e.getValue(), "cancellerHandle");
            if (h == t) {
                kind = "timeout";
                o.put("checkpoint", e.getKey());
            }
        }
        o.put("kind", kind);
        o.put("at", t.dueRelative());
        if (t.period() != 0) {
            o.put("period", t.period());
        }
        if (kind.equals("other")) {
            o.put("task_class", t.task().getClass().getName());
        }
        return o;
    }

    // ------------------------------------------------------------------ tasks

    private void taskFailed(Seq s, JsonNode c, ObjectNode r) throws Exception {
        Task t = s.task((int) Json.reqLong(c, "task"));
        String notify = Json.optStr(c, "notify", "none");
        if (!List.of("none", "fail_unacked", "failover").contains(notify)) {
            throw Refusal.bad("notify is 'none', 'fail_unacked' or 'failover'");
        }
        if (notify.equals("fail_unacked") && !hasFailUnacknowledged(s)) {
            throw Refusal.unsupported(
                    "this Flink version's CheckpointCoordinator has no failUnacknowledgedPendingCheckpointsFor");
        }
        Execution e = t.current();
        if (e.getState().isTerminal()) {
            // What Flink's scheduler does with a failure report for an execution that is already
            // terminal: nothing (Execution.markFailed -> processFail returns for a terminal state;
            // transitionState refuses to leave one). Reported, not refused.
            r.put("attempt", e.getAttemptNumber());
            r.put("already", e.getState().name());
            return;
        }
        e.transitionState(ExecutionState.FAILED);
        r.put("attempt", e.getAttemptNumber());
        s.exec.drain();
        if (notify.equals("fail_unacked")) {
            Proxies.invoke(
                    s.coord,
                    "failUnacknowledgedPendingCheckpointsFor",
                    e.getAttemptId(),
                    new Exception("ckpt harness: task failed"));
        } else if (notify.equals("failover")) {
            s.coord.abortPendingCheckpoints(new CheckpointException(CheckpointFailureReason.JOB_FAILOVER_REGION));
        }
    }

    private void newAttempt(Seq s, Task t, ExecutionState target, ObjectNode r) throws Exception {
        Execution e = t.current();
        if (!e.getState().isTerminal()) {
            r.put("implicitly_failed_attempt", e.getAttemptNumber());
            e.transitionState(ExecutionState.FAILED);
            s.exec.drain();
        }
        resetForNewExecution(s, t);
        register(s, t);
        deploy(s, t, target);
    }

    private void taskRunning(Seq s, JsonNode c, ObjectNode r) throws Exception {
        Task t = s.task((int) Json.reqLong(c, "task"));
        ExecutionState target = executionState(Json.optStr(c, "state", "RUNNING"));
        newAttempt(s, t, target, r);
        r.put("attempt", t.current().getAttemptNumber());
    }

    private void taskState(Seq s, JsonNode c, ObjectNode r) {
        Task t = s.task((int) Json.reqLong(c, "task"));
        ExecutionState target = executionState(Json.reqStr(c, "state"));
        Execution e = t.current();
        if (e.getState().isTerminal()) {
            throw new Refusal("sequence_state", "task " + t.index + " is " + e.getState() + " (terminal)");
        }
        r.put("from", e.getState().name());
        e.transitionState(target);
    }

    private void taskFinished(Seq s, JsonNode c, ObjectNode r) throws Exception {
        Task t = s.task((int) Json.reqLong(c, "task"));
        Execution e = t.current();
        r.put("from", e.getState().name());
        markFinished(s, t);
        r.put("state", t.current().getState().name());
    }

    /** What the scheduler does when it restarts tasks (SchedulerBase.restoreState + redeploy). */
    private void restart(Seq s, JsonNode c, ObjectNode r) throws Exception {
        List<Integer> l = Json.optInts(c, "tasks");
        List<Task> ts = new ArrayList<>();
        if (l == null) {
            ts.addAll(s.tasks);
        } else {
            for (int i : l) {
                ts.add(s.task(i));
            }
        }
        boolean global = Json.optBool(c, "global", false);
        boolean restore = Json.optBool(c, "restore", true);
        ArrayNode failed = r.putArray("implicitly_failed");
        for (Task t : ts) {
            Execution e = t.current();
            if (!e.getState().isTerminal()) {
                failed.add(t.index);
                e.transitionState(ExecutionState.FAILED);
            }
        }
        s.exec.drain();
        for (Task t : ts) {
            resetForNewExecution(s, t);
            register(s, t);
        }
        if (restore) {
            s.coord.abortPendingCheckpoints(new CheckpointException(CheckpointFailureReason.JOB_FAILOVER_REGION));
            s.exec.drain();
            Set<ExecutionJobVertex> vs = new LinkedHashSet<>();
            for (Task t : ts) {
                vs.add(t.ejv);
            }
            r.set("restore", restore(s, global ? "all" : "subtasks", vs, false, false));
            r.set("restored", restoredStates(s));
        }
        for (Task t : ts) {
            deploy(s, t, ExecutionState.RUNNING);
        }
    }

    private void restoreLatest(Seq s, JsonNode c, ObjectNode r) throws Exception {
        String scope = Json.optStr(c, "scope", "all");
        if (!List.of("all", "subtasks", "initial", "legacy").contains(scope)) {
            throw Refusal.bad("scope is 'all', 'subtasks', 'initial' or 'legacy'");
        }
        List<Integer> l = Json.optInts(c, "tasks");
        Set<ExecutionJobVertex> vs = new LinkedHashSet<>();
        for (Task t : l == null ? s.tasks : tasksOf(s, l)) {
            vs.add(t.ejv);
        }
        r.set(
                "restore",
                restore(
                        s,
                        scope,
                        vs,
                        Json.optBool(c, "error_if_none", false),
                        Json.optBool(c, "allow_non_restored", false)));
        r.set("restored", restoredStates(s));
    }

    private List<Task> tasksOf(Seq s, List<Integer> l) {
        List<Task> ts = new ArrayList<>();
        for (int i : l) {
            ts.add(s.task(i));
        }
        return ts;
    }

    /** Per task, the state Flink assigned to its current attempt. */
    protected ArrayNode restoredStates(Seq s) {
        ArrayNode a = Json.arr();
        for (Task t : s.tasks) {
            JobManagerTaskRestore tr = t.current().getTaskRestore();
            if (tr == null) {
                continue;
            }
            ObjectNode o = a.addObject();
            o.put("task", t.index);
            o.put("attempt", t.current().getAttemptNumber());
            o.put("checkpoint", tr.getRestoreCheckpointId());
            ArrayNode hs = o.putArray("handles");
            TaskStateSnapshot snap = tr.getTaskStateSnapshot();
            if (snap != null) {
                for (Map.Entry<?, OperatorSubtaskState> e : snap.getSubtaskStateMappings()) {
                    for (long h : handlesOf(e.getValue())) {
                        hs.add(h);
                    }
                }
            }
        }
        return a;
    }

    // ================================================================== responses

    private void collect(Seq s, ObjectNode resp, boolean ending) {
        resp.put("now", s.now());
        Map<Long, PendingCheckpoint> cur = s.coord.getPendingCheckpoints();
        ArrayNode aborted = Json.arr();
        ArrayNode completed = Json.arr();
        for (Map.Entry<Long, PendingCheckpoint> e : cur.entrySet()) {
            s.known.putIfAbsent(e.getKey(), e.getValue());
        }
        for (Long id : new ArrayList<>(s.known.keySet())) {
            if (cur.containsKey(id)) {
                continue;
            }
            PendingCheckpoint p = s.known.remove(id);
            CompletableFuture<?> f = p.getCompletionFuture();
            ObjectNode o = Json.obj();
            o.put("checkpoint", id);
            o.put("savepoint", isSavepointProps(pendingProps(p)));
            if (f.isDone() && !f.isCompletedExceptionally()) {
                // The completion future succeeded. In 1.11 it does so before the store is
                // written, so say whether the store took it.
                o.put("stored", storeIds(s, s.realStore).contains(id));
                completed.add(o);
            } else {
                CheckpointException ce = p.getFailureCause();
                Throwable why = ce;
                if (why == null && f.isCompletedExceptionally()) {
                    why = failureOf(f);
                    ce = checkpointException(why);
                }
                String reason = ce != null ? ce.getCheckpointFailureReason().name() : null;
                if (reason == null) {
                    // A failed store completes the future with the store's own exception; the
                    // failure manager was told the reason.
                    for (JsonNode fm : s.rec.failureManager) {
                        if (fm.path("checkpoint").asLong(-1) == id && fm.has("reason")) {
                            reason = fm.get("reason").asText();
                            o.put("reason_from", "failure_manager");
                        }
                    }
                }
                o.put("reason", reason);
                if (ce == null) {
                    o.put("message", why == null ? "removed without failure cause" : String.valueOf(why));
                }
                aborted.add(o);
            }
        }
        resp.set("rpcs", s.rec.rpcs);
        resp.set("completed", completed);
        resp.set("aborted", aborted);
        resp.set("store_ops", s.rec.storeOps);
        resp.set("discarded", s.rec.discards);
        resp.set("failure_manager", s.rec.failureManager);
        resp.set("fail_job", s.rec.failJob);
        ArrayNode reqs = Json.arr();
        for (Req q : s.requests) {
            if (q.reported || !q.future.isDone()) {
                continue;
            }
            q.reported = true;
            ObjectNode o = reqs.addObject();
            o.put("request", q.id);
            o.put("kind", q.kind);
            if (q.future.isCompletedExceptionally()) {
                o.put("status", "failed");
                Throwable t = failureOf(q.future);
                CheckpointException ce = checkpointException(t);
                o.put("reason", ce != null ? ce.getCheckpointFailureReason().name() : null);
                if (ce == null) {
                    o.put("message", String.valueOf(t));
                }
            } else {
                o.put("status", "completed");
                Object v = q.future.getNow(null);
                if (v instanceof CompletedCheckpoint) {
                    o.put("checkpoint", ((CompletedCheckpoint) v).getCheckpointID());
                }
            }
        }
        resp.set("requests", reqs);
        if (s.rec.unbracketed > 0) {
            resp.put("harness_warning", s.rec.unbracketed + " checkpoint id(s) allocated outside a timestamp bracket");
        }
        if (s.rec.scheduler.size() > 0) {
            resp.set("scheduler", s.rec.scheduler);
        }
        resp.set("uncaught", s.rec.uncaught);
        resp.set("state", snapshotState(s));
        if (ending) {
            finishEnd(s);
        }
    }

    private ObjectNode snapshotState(Seq s) {
        ObjectNode st = Json.obj();
        ArrayNode pend = st.putArray("pending");
        Map<Long, PendingCheckpoint> cur = new TreeMap<>(s.coord.getPendingCheckpoints());
        Map<Object, Long> cancellers = new java.util.IdentityHashMap<>();
        for (Map.Entry<Long, PendingCheckpoint> e : cur.entrySet()) {
            PendingCheckpoint p = e.getValue();
            ObjectNode o = pend.addObject();
            o.put("checkpoint", e.getKey());
            o.put("savepoint", isSavepointProps(pendingProps(p)));
            s.rec.putTs(o, "ts", p.getCheckpointTimestamp());
            ArrayNode acked = o.putArray("acked");
            ArrayNode notAcked = o.putArray("not_acked");
            @SuppressWarnings("unchecked")
            Map<ExecutionAttemptID, ?> na = (Map<ExecutionAttemptID, ?>) Proxies.field(p, "notYetAcknowledgedTasks");
            @SuppressWarnings("unchecked")
            Set<ExecutionAttemptID> ak = (Set<ExecutionAttemptID>) Proxies.field(p, "acknowledgedTasks");
            for (int i : sortedTasks(s, ak)) {
                acked.add(i);
            }
            for (int i : sortedTasks(s, na.keySet())) {
                notAcked.add(i);
            }
            o.put("fully_acked", p.isFullyAcknowledged());
            Object h = Proxies.field(p, "cancellerHandle");
            if (h != null) {
                cancellers.put(h, e.getKey());
            }
            if (h instanceof ManualExecutor.Timer) {
                ManualExecutor.Timer t = (ManualExecutor.Timer) h;
                if (!t.isCancelled() && !t.isDone()) {
                    o.put("timeout_at", t.dueRelative());
                }
            }
        }
        ArrayNode store = st.putArray("store");
        try {
            for (CompletedCheckpoint c : s.store.getAllCheckpoints()) {
                ObjectNode o = store.addObject();
                o.put("checkpoint", c.getCheckpointID());
                o.put("savepoint", isSavepointProps(c.getProperties()));
                s.rec.putTs(o, "ts", c.getTimestamp());
                ArrayNode hs = o.putArray("handles");
                for (OperatorState os : c.getOperatorStates().values()) {
                    for (OperatorSubtaskState sub : os.getStates()) {
                        for (long x : handlesOf(sub)) {
                            hs.add(x);
                        }
                    }
                }
            }
        } catch (Exception e) {
            st.set("store_error", describe(e));
        }
        st.put("queued", numQueued(s));
        st.put("triggering", s.coord.isTriggering());
        if (Proxies.hasField(s.coord, "periodicScheduling")) {
            st.put("periodic", (Boolean) Proxies.field(s.coord, "periodicScheduling"));
        }
        st.put("shutdown", s.coord.isShutdown());
        st.put("failure_counter", failureCounter(s));
        try {
            st.put("next_id", s.counter.get());
        } catch (Exception e) {
            st.put("next_id", (Long) null);
        }
        ArrayNode timers = st.putArray("timers");
        for (ManualExecutor.Timer t : s.exec.armedTimers()) {
            ObjectNode o = timers.addObject();
            Long cp = cancellers.get(t);
            o.put("kind", cp != null ? "timeout" : t.kind());
            if (cp != null) {
                o.put("checkpoint", cp);
            }
            o.put("at", t.dueRelative());
            if (t.period() != 0) {
                o.put("period", t.period());
            }
            if (cp == null && t.kind().equals("other")) {
                o.put("task_class", t.task().getClass().getName());
            }
        }
        ArrayNode tasks = st.putArray("tasks");
        for (Task t : s.tasks) {
            ObjectNode o = tasks.addObject();
            o.put("task", t.index);
            o.put("attempt", t.current().getAttemptNumber());
            o.put("state", t.current().getState().name());
        }
        ArrayNode armed = st.putArray("armed_failures");
        if (s.failNextStore != null) {
            armed.add("store:" + s.failNextStore);
        }
        if (s.failNextFinalize) {
            armed.add("finalize");
        }
        if (s.failNextId) {
            armed.add("id");
        }
        ArrayNode hooks = st.putArray("hooks_waiting");
        for (Map.Entry<Long, List<CompletableFuture<Object>>> e : s.hookFutures.entrySet()) {
            for (int i = 0; i < e.getValue().size(); i++) {
                if (!e.getValue().get(i).isDone()) {
                    ObjectNode o = hooks.addObject();
                    o.put("checkpoint", e.getKey());
                    o.put("hook", i);
                }
            }
        }
        return st;
    }

    private List<Integer> sortedTasks(Seq s, Collection<ExecutionAttemptID> ids) {
        List<Integer> l = new ArrayList<>();
        for (ExecutionAttemptID id : ids) {
            int[] ta = s.rec.attempt(id);
            l.add(ta == null ? -1 : ta[0]);
        }
        l.sort(Comparator.naturalOrder());
        return l;
    }

    protected CheckpointProperties pendingProps(PendingCheckpoint p) {
        return (CheckpointProperties) Proxies.field(p, "props");
    }

    protected int numQueued(Seq s) {
        Object d = Proxies.field(s.coord, "requestDecider");
        return (Integer) Proxies.invoke(d, "getNumQueuedRequests");
    }

    protected static List<Long> handlesOf(OperatorSubtaskState sub) {
        List<Long> l = new ArrayList<>();
        for (OperatorStateHandle h : sub.getManagedOperatorState()) {
            if (h instanceof OperatorStreamStateHandle) {
                StreamStateHandle d = ((OperatorStreamStateHandle) h).getDelegateStateHandle();
                if (d instanceof RecordingHandle) {
                    l.add(((RecordingHandle) d).handle);
                }
            }
        }
        return l;
    }

    protected static List<Long> storeIds(Seq s, CompletedCheckpointStore st) {
        List<Long> l = new ArrayList<>();
        try {
            for (CompletedCheckpoint c : st.getAllCheckpoints()) {
                l.add(c.getCheckpointID());
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return l;
    }

    // ================================================================== helpers

    static Throwable failureOf(CompletableFuture<?> f) {
        try {
            f.getNow(null);
            return null;
        } catch (CompletionException | java.util.concurrent.CancellationException e) {
            return e.getCause() != null ? e.getCause() : e;
        }
    }

    static CheckpointException checkpointException(Throwable t) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            if (x instanceof CheckpointException) {
                return (CheckpointException) x;
            }
            if (x.getCause() == x) {
                break;
            }
        }
        return null;
    }

    public static ObjectNode describe(Throwable t) {
        ObjectNode o = Json.obj();
        if (t instanceof ExecutionException || t instanceof CompletionException) {
            if (t.getCause() != null) {
                t = t.getCause();
            }
        }
        o.put("class", t.getClass().getName());
        o.put("message", String.valueOf(t.getMessage()));
        CheckpointException ce = checkpointException(t);
        if (ce != null) {
            o.put("reason", ce.getCheckpointFailureReason().name());
        }
        ArrayNode chain = o.putArray("causes");
        int n = 0;
        for (Throwable x = t.getCause(); x != null && n < 8; x = x.getCause(), n++) {
            chain.add(x.getClass().getName() + ": " + x.getMessage());
        }
        ArrayNode at = o.putArray("at");
        StackTraceElement[] st = t.getStackTrace();
        for (int i = 0; i < Math.min(6, st.length); i++) {
            at.add(st[i].toString());
        }
        return o;
    }

    static String stack(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    protected static JobStatus jobStatus(String name) {
        try {
            return JobStatus.valueOf(name.toUpperCase());
        } catch (IllegalArgumentException e) {
            throw Refusal.bad("unknown job status " + name);
        }
    }

    protected static ExecutionState executionState(String name) {
        try {
            return ExecutionState.valueOf(name.toUpperCase());
        } catch (IllegalArgumentException e) {
            throw Refusal.bad("unknown execution state " + name);
        }
    }

    static void deleteTree(Path p) {
        try {
            if (!Files.exists(p)) {
                return;
            }
            try (java.util.stream.Stream<Path> w = Files.walk(p)) {
                w.sorted(Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
            }
        } catch (IOException ignored) {
            // best effort
        }
    }
}
