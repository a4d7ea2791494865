package ckpt.flink;

import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;

/**
 * A task's state as the harness hands it to Flink in an acknowledgement: a real in-memory stream
 * handle (so Flink's metadata serializer accepts it) that records every {@code discardState()} call
 * Flink makes on it. The handle id is the number the client chose in {@code ack}'s {@code state}.
 */
public final class RecordingHandle extends ByteStreamStateHandle {
    private static final long serialVersionUID = 1L;

    /** Where discards are reported (the current sequence's recorder; null once it ended). */
    public static volatile Recorder sink;

    public final long handle;
    public final int sequence;

    public RecordingHandle(long handle, int sequence) {
        super("ckpt-handle-" + handle, new byte[] {(byte) handle});
        this.handle = handle;
        this.sequence = sequence;
    }

    @Override
    public void discardState() {
        Recorder r = sink;
        if (r != null && r.sequence == sequence) {
            r.discarded(handle);
        }
    }
}
