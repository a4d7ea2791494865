package ckpt.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriteRequestExecutorFactory;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriter.ChannelStateWriteResult;
import org.apache.flink.runtime.checkpoint.channel.ChannelStateWriterImpl;
import org.apache.flink.runtime.checkpoint.channel.InputChannelInfo;
import org.apache.flink.runtime.checkpoint.channel.ResultSubpartitionInfo;
import org.apache.flink.runtime.io.network.buffer.Buffer;
import org.apache.flink.runtime.io.network.buffer.FreeingBufferRecycler;
import org.apache.flink.runtime.io.network.buffer.NetworkBuffer;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.CheckpointStorageWorkerView;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.util.CloseableIterator;

import java.util.concurrent.TimeUnit;

/**
 * Probe (not part of the protocol): Flink 1.20's task-side ChannelStateWriterImpl constructed from
 * the main jars alone and driven through the calls a task makes. Run with probe.sh 1.20.
 */
public final class ChannelStateProbe {
    public static void main(String[] args) throws Exception {
        JobID job = new JobID();
        JobVertexID vertex = new JobVertexID();
        CheckpointStorageWorkerView storage = new JobManagerCheckpointStorage().createCheckpointStorage(job);
        ChannelStateWriterImpl w =
                new ChannelStateWriterImpl(
                        vertex, "probe-task", 0, () -> storage, new ChannelStateWriteRequestExecutorFactory(job), 5);
        CheckpointOptions unaligned =
                CheckpointOptions.unaligned(CheckpointType.CHECKPOINT, CheckpointStorageLocationReference.getDefault());
        w.start(1, unaligned);
        w.addInputData(1, new InputChannelInfo(0, 0), 0, CloseableIterator.ofElements(Buffer::recycleBuffer, buffer(8)));
        w.addOutputData(1, new ResultSubpartitionInfo(0, 0), 0, buffer(16));
        w.finishInput(1);
        w.finishOutput(1);
        ChannelStateWriteResult r1 = w.getAndRemoveWriteResult(1);
        System.out.println("1.20 cp1: input handles " + r1.getInputChannelStateHandles().get(10, TimeUnit.SECONDS).size()
                + ", output handles " + r1.getResultSubpartitionStateHandles().get(10, TimeUnit.SECONDS).size());
        w.start(2, unaligned);
        w.abort(2, new Exception("notified aborted"), true);
        try {
            ChannelStateWriteResult r2 = w.getAndRemoveWriteResult(2);
            System.out.println("1.20 cp2 after abort(cleanup=true): result present, input future done exceptionally="
                    + r2.getInputChannelStateHandles().isCompletedExceptionally());
        } catch (Exception e) {
            System.out.println("1.20 cp2 after abort(cleanup=true): getAndRemoveWriteResult threw " + e);
        }
        w.start(3, unaligned);
        w.abort(3, new Exception("declined"), false);
        ChannelStateWriteResult r3 = w.getAndRemoveWriteResult(3);
        try {
            r3.getInputChannelStateHandles().get(10, TimeUnit.SECONDS);
            System.out.println("1.20 cp3 after abort(cleanup=false): completed normally");
        } catch (Exception e) {
            System.out.println("1.20 cp3 after abort(cleanup=false): result failed with " + e.getCause());
        }
        w.close();
        System.out.println("1.20 closed");
    }

    static NetworkBuffer buffer(int n) {
        NetworkBuffer b = new NetworkBuffer(MemorySegmentFactory.allocateUnpooledSegment(64), FreeingBufferRecycler.INSTANCE);
        b.writerIndex(n);
        return b;
    }
}
