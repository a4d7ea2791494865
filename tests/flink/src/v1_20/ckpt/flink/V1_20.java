package ckpt.flink;

import org.apache.flink.api.common.time.Time;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.blob.VoidBlobWriter;
import org.apache.flink.runtime.checkpoint.CheckpointStatsTracker;
import org.apache.flink.runtime.checkpoint.CheckpointsCleaner;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStore;
import org.apache.flink.runtime.checkpoint.StandaloneCheckpointIDCounter;
import org.apache.flink.runtime.deployment.TaskDeploymentDescriptorFactory;
import org.apache.flink.runtime.executiongraph.DefaultExecutionGraph;
import org.apache.flink.runtime.executiongraph.DefaultExecutionGraphBuilder;
import org.apache.flink.runtime.executiongraph.DefaultVertexAttemptNumberStore;
import org.apache.flink.runtime.executiongraph.ExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.NoOpExecutionDeploymentListener;
import org.apache.flink.runtime.io.network.partition.JobMasterPartitionTracker;
import org.apache.flink.runtime.io.network.partition.ResultPartitionType;
import org.apache.flink.runtime.jobgraph.DistributionPattern;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.runtime.scheduler.SchedulerBase;
import org.apache.flink.runtime.shuffle.ShuffleMaster;

import org.slf4j.LoggerFactory;

/** Flink 1.20: the gen2 harness with 1.20's buildGraph and stats tracker. */
public final class V1_20 extends Gen2 {

    @Override
    protected DefaultExecutionGraph buildGraph(
            Seq s, JobGraph jg, CompletedCheckpointStore store, CheckpointsCleaner cleaner,
            org.apache.flink.runtime.checkpoint.CheckpointIDCounter counter) throws Exception {
        return DefaultExecutionGraphBuilder.buildGraph(
                jg,
                new Configuration(),
                s.exec,
                s.exec,
                V1_20.class.getClassLoader(),
                store,
                cleaner,
                counter,
                Time.seconds(10),
                VoidBlobWriter.getInstance(),
                LoggerFactory.getLogger(V1_20.class),
                Proxies.of(ShuffleMaster.class, null),
                Proxies.of(JobMasterPartitionTracker.class, null),
                TaskDeploymentDescriptorFactory.PartitionLocationConstraint.fromJobType(jg.getJobType()),
                NoOpExecutionDeploymentListener.get(),
                (execution, previousState, newState) -> {},
                System.currentTimeMillis(),
                new DefaultVertexAttemptNumberStore(),
                SchedulerBase.computeVertexParallelismStore(jg),
                () -> statsTracker(s),
                false,
                new ExecutionJobVertex.Factory(),
                ResultPartitionType::isBlockingOrBlockingPersistentResultPartition,
                false,
                UnregisteredMetricGroups.createUnregisteredJobManagerJobMetricGroup());
    }

    @Override
    protected CheckpointStatsTracker statsTracker(Seq s) {
        return new CheckpointStatsTracker(
                10, UnregisteredMetricGroups.createUnregisteredJobManagerJobMetricGroup(), s.jobId);
    }

    @Override
    protected void connect(JobVertex down, JobVertex up) {
        down.connectNewDataSetAsInput(up, DistributionPattern.ALL_TO_ALL, ResultPartitionType.PIPELINED_BOUNDED);
    }
}
