package ckpt.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter.ChannelStateWriteResult;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriterImpl;
import org.apache.flink.runtime.checkpoint.channel.InputChannelInfo;
import org.apache.flink.runtime.checkpoint.channel.ResultSubpartitionInfo;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.buffer.FreeingBufferRecycler;
import org.apache.flink.runtime.io.network.buffer.NetworkBuffer;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.CheckpointStorageWorkerView;
import org.apache.flink.runtime.state.memory.MemoryStateBackend;
import org.apache.flink.util.CloseableIterator;

import java.util.concurrent.TimeUnit;

/**
 * Probe (not part of the protocol): Flink 1.11's task-side ChannelStateWriterImpl constructed from
 * the main jars alone and driven through the calls a task makes. Prints one line per step.
 * Run with probe.sh 1.11.
 */
public final class ChannelStateProbe {
    public static void main(String[] args) throws Exception {
        CheckpointStorageWorkerView storage = new MemoryStateBackend().createCheckpointStorage(new JobID());
        ChannelStateWriterImpl w = new ChannelStateWriterImpl("probe-task", storage);
        w.open();
        CheckpointOptions unaligned =
                new CheckpointOptions(
                        CheckpointType.CHECKPOINT,
                        CheckpointStorageLocationReference.getDefault(),
                        CheckpointOptions.AlignmentType.UNALIGNED);
        // checkpoint 1: the happy path
        w.start(1, unaligned);
        w.addInputData(1, new InputChannelInfo(0, 0), 0, CloseableIterator.ofElements(Buffer::recycleBuffer, buffer(8)));
        w.addOutputData(1, new ResultSubpartitionInfo(0, 0), 0, buffer(16));
        w.finishInput(1);
        w.finishOutput(1);
        ChannelStateWriteResult r1 = w.getAndRemoveWriteResult(1);
        System.out.println("1.11 cp1: input handles " + r1.getInputChannelStateHandles().get(10, TimeUnit.SECONDS).size()
                + ", output handles " + r1.getResultSubpartitionStateHandles().get(10, TimeUnit.SECONDS).size());
        // checkpoint 2: aborted with cleanup before the checkpoint mail takes the result (FLINK-17869)
        w.start(2, unaligned);
        w.abort(2, new Exception("notified aborted"), true);
        try {
            ChannelStateWriteResult r2 = w.getAndRemoveWriteResult(2);
            System.out.println("1.11 cp2 after abort(cleanup=true): result present, input future done exceptionally="
                    + r2.getInputChannelStateHandles().isCompletedExceptionally());
        } catch (Exception e) {
            System.out.println("1.11 cp2 after abort(cleanup=true): getAndRemoveWriteResult threw " + e);
        }
        // checkpoint 3: abort without cleanup (the task's own abort path), result still there
        w.start(3, unaligned);
        w.abort(3, new Exception("declined"), false);
        ChannelStateWriteResult r3 = w.getAndRemoveWriteResult(3);
        try {
            r3.getInputChannelStateHandles().get(10, TimeUnit.SECONDS);
            System.out.println("1.11 cp3 after abort(cleanup=false): completed normally");
        } catch (Exception e) {
            System.out.println("1.11 cp3 after abort(cleanup=false): result failed with " + e.getCause());
        }
        w.close();
        System.out.println("1.11 closed");
    }

    static NetworkBuffer buffer(int n) {
        NetworkBuffer b = new NetworkBuffer(MemorySegmentFactory.allocateUnpooledSegment(64), FreeingBufferRecycler.INSTANCE);
        b.writerIndex(n);
        return b;
    }
}
