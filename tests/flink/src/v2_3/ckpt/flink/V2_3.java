package ckpt.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.blob.VoidBlobWriter;
import org.apache.flink.runtime.checkpoint.CheckpointStatsTracker;
import org.apache.flink.runtime.checkpoint.CheckpointsCleaner;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStore;
import org.apache.flink.runtime.checkpoint.DefaultCheckpointStatsTracker;
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
import org.apache.flink.runtime.jobgraph.IntermediateDataSetID;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.runtime.scheduler.SchedulerBase;
import org.apache.flink.runtime.scheduler.adaptivebatch.NonAdaptiveExecutionPlanSchedulingContext;
import org.apache.flink.runtime.shuffle.ShuffleMaster;

import org.slf4j.LoggerFactory;

import java.time.Duration;

/** Flink 2.3: the gen2 harness with 2.3's buildGraph, stats tracker and edge API. */
public final class V2_3 extends Gen2 {

    @Override
    protected DefaultExecutionGraph buildGraph(
            Seq s, JobGraph jg, CompletedCheckpointStore store, CheckpointsCleaner cleaner,
            org.apache.flink.runtime.checkpoint.CheckpointIDCounter counter) throws Exception {
        return DefaultExecutionGraphBuilder.buildGraph(
                jg,
                new Configuration(),
                s.exec,
                s.exec,
                V2_3.class.getClassLoader(),
                store,
                cleaner,
                counter,
                Duration.ofSeconds(10),
                VoidBlobWriter.getInstance(),
                LoggerFactory.getLogger(V2_3.class),
                Proxies.of(ShuffleMaster.class, null),
                Proxies.of(JobMasterPartitionTracker.class, null),
                TaskDeploymentDescriptorFactory.PartitionLocationConstraint.fromJobType(jg.getJobType()),
                NoOpExecutionDeploymentListener.get(),
                (execution, previousState, newState) -> {},
                System.currentTimeMillis(),
                new DefaultVertexAttemptNumberStore(),
                SchedulerBase.computeVertexParallelismStore(jg),
                statsTracker(s),
                false,
                new ExecutionJobVertex.Factory(),
                ResultPartitionType::isBlockingOrBlockingPersistentResultPartition,
                false,
                UnregisteredMetricGroups.createUnregisteredJobManagerJobMetricGroup(),
                NonAdaptiveExecutionPlanSchedulingContext.INSTANCE);
    }

    @Override
    protected CheckpointStatsTracker statsTracker(Seq s) {
        return new DefaultCheckpointStatsTracker(
                10, UnregisteredMetricGroups.createUnregisteredJobManagerJobMetricGroup());
    }

    @Override
    protected void connect(JobVertex down, JobVertex up) {
        down.connectNewDataSetAsInput(
                up, DistributionPattern.ALL_TO_ALL, ResultPartitionType.PIPELINED_BOUNDED,
                new IntermediateDataSetID(), false, false);
    }
}
