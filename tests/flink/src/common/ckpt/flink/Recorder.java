package ckpt.flink;

import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What Flink did during one command, in the order it happened, plus the tables that turn Flink's
 * identifiers into the protocol's: execution attempt ids into (task index, attempt number), and
 * wall-clock checkpoint timestamps into manual-clock times.
 */
public final class Recorder {
    public final int sequence;

    public ArrayNode rpcs = Json.arr();
    public ArrayNode discards = Json.arr();
    public ArrayNode storeOps = Json.arr();
    public ArrayNode failureManager = Json.arr();
    public ArrayNode failJob = Json.arr();
    public ArrayNode scheduler = Json.arr();
    public ArrayNode uncaught = Json.arr();

    private final Map<ExecutionAttemptID, int[]> attempts = new HashMap<>();

    public Recorder(int sequence) {
        this.sequence = sequence;
    }

    public void reset() {
        rpcs = Json.arr();
        discards = Json.arr();
        storeOps = Json.arr();
        failureManager = Json.arr();
        failJob = Json.arr();
        scheduler = Json.arr();
        uncaught = Json.arr();
    }

    // ------------------------------------------------------------------ attempts

    public void registerAttempt(ExecutionAttemptID id, int task, int attempt) {
        attempts.put(id, new int[] {task, attempt});
    }

    /** {task, attempt}, or null for an attempt the harness never created. */
    public int[] attempt(ExecutionAttemptID id) {
        return attempts.get(id);
    }

    public void putAttempt(ObjectNode o, ExecutionAttemptID id) {
        int[] ta = attempts.get(id);
        if (ta == null) {
            o.put("task", -1);
            o.put("attempt", -1);
            o.put("attempt_id", String.valueOf(id));
        } else {
            o.put("task", ta[0]);
            o.put("attempt", ta[1]);
        }
    }

    // ------------------------------------------------------------------ discards

    void discarded(long handle) {
        ObjectNode o = Json.obj();
        o.put("handle", handle);
        discards.add(o);
    }

    // ------------------------------------------------------------------ timestamps

    /**
     * Flink takes a checkpoint's timestamp from the wall clock (System.currentTimeMillis in
     * CheckpointCoordinator.startTriggeringCheckpoint, when a trigger request starts, also when it
     * starts from the queue later). The harness runs every command (and, within 'advance', every
     * timer firing) inside a bracket that knows the manual-clock time, and marks a bracket used
     * when Flink allocated a checkpoint id in it (the id is allocated right after the timestamp is
     * taken). A wall-clock value maps back to the manual time of the used bracket that contains it.
     * Before a bracket opens at another manual time than the last used one, the harness waits for
     * the wall clock to pass that bracket's last millisecond, so used brackets with different
     * manual times never share a millisecond (a wait of at most 1 ms, only right after a bracket
     * that started a checkpoint).
     */
    private final List<long[]> ts = new ArrayList<>(); // used brackets: {wallLo, wallHi, manual}

    private long openLo;
    private long openManual;
    private boolean open;
    private boolean openUsed;
    /** Ids allocated outside any bracket (a harness bug if ever non-zero). */
    public int unbracketed;

    public void openTs(long manual) {
        if (open) {
            closeTs();
        }
        long w = System.currentTimeMillis();
        if (!ts.isEmpty()) {
            long[] last = ts.get(ts.size() - 1);
            if (last[2] != manual) {
                while (w <= last[1]) {
                    Thread.onSpinWait();
                    w = System.currentTimeMillis();
                }
            }
        }
        openLo = w;
        openManual = manual;
        open = true;
        openUsed = false;
    }

    /** Flink allocated a checkpoint id: the open bracket holds a checkpoint timestamp. */
    public void markUsed() {
        if (open) {
            openUsed = true;
        } else {
            unbracketed++;
        }
    }

    public void closeTs() {
        if (!open) {
            return;
        }
        open = false;
        if (!openUsed) {
            return;
        }
        long w = System.currentTimeMillis();
        if (!ts.isEmpty()) {
            long[] last = ts.get(ts.size() - 1);
            if (last[2] == openManual) {
                last[1] = w; // same manual time: one bracket
                return;
            }
        }
        ts.add(new long[] {openLo, w, openManual});
    }

    /** The manual time for a Flink wall-clock timestamp, or null when no bracket holds it. */
    public Long normalizeTs(long wall) {
        if (open && wall >= openLo) {
            return openManual;
        }
        for (int i = ts.size() - 1; i >= 0; i--) {
            long[] b = ts.get(i);
            if (wall >= b[0] && wall <= b[1]) {
                return b[2];
            }
            if (wall > b[1]) {
                break;
            }
        }
        return null;
    }

    public void putTs(ObjectNode o, String field, long wall) {
        Long n = normalizeTs(wall);
        if (n == null) {
            o.put(field, (Long) null);
            o.put(field + "_unmapped_wall", wall);
        } else {
            o.put(field, n);
        }
    }
}
