package ckpt.flink;

import org.apache.flink.util.clock.ManualClock;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.Delayed;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RunnableScheduledFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One single-threaded, manually driven executor that serves as Flink's main-thread executor, the
 * coordinator's I/O executor and its timer. Nothing runs on another thread: {@link #drain()} runs
 * queued tasks and due timers on the caller's thread; {@link #advanceTo(long)} moves the {@link
 * ManualClock} from one due timer to the next, firing each at its due time.
 *
 * <p>Timers due at the same instant fire in the order they were scheduled (as {@code
 * ScheduledThreadPoolExecutor} does). A fixed-rate timer is re-armed at its previous deadline plus
 * its period; a fixed-delay one at its firing time plus the delay.
 */
public final class ManualExecutor extends AbstractExecutorService implements ScheduledExecutorService {

    /** What a timer is, as far as the harness can tell from the scheduled runnable. */
    public interface Classifier {
        String kind(Object task);
    }

    public final ManualClock clock;
    private final long baseMillis;
    private final ArrayDeque<Runnable> queue = new ArrayDeque<>();
    private final PriorityQueue<Timer> timers = new PriorityQueue<>();
    private long seq;
    private boolean shutdown;
    private int depth;
    private Classifier classifier = t -> "other";
    /** Called for every uncaught exception a task threw (Flink's executors log and continue). */
    public java.util.function.Consumer<Throwable> onUncaught = t -> {};

    public ManualExecutor(ManualClock clock, long baseMillis) {
        this.clock = clock;
        this.baseMillis = baseMillis;
    }

    public void setClassifier(Classifier c) {
        this.classifier = c;
    }

    /** Milliseconds since the sequence's time zero. */
    public long now() {
        return clock.absoluteTimeMillis() - baseMillis;
    }

    public long toRelative(long absMillis) {
        return absMillis - baseMillis;
    }

    // ------------------------------------------------------------------ scheduling

    public final class Timer implements RunnableScheduledFuture<Object> {
        final long id = seq++;
        final Object task; // Runnable or Callable
        long due; // absolute ms
        final long period; // >0 fixed rate, <0 fixed delay, 0 one shot
        boolean cancelled;
        boolean done;
        Object result;
        Throwable failure;
        final String kind;

        Timer(Object task, long due, long period) {
            this.task = task;
            this.due = due;
            this.period = period;
            this.kind = classifier.kind(task);
        }

        public String kind() {
            return kind;
        }

        public long dueRelative() {
            return due - baseMillis;
        }

        public long period() {
            return period;
        }

        public Object task() {
            return task;
        }

        public long id() {
            return id;
        }

        @Override
        public boolean isPeriodic() {
            return period != 0;
        }

        @Override
        public void run() {
            try {
                if (task instanceof Callable) {
                    result = ((Callable<?>) task).call();
                } else {
                    ((Runnable) task).run();
                }
                if (period == 0) {
                    done = true;
                }
            } catch (Throwable t) {
                failure = t;
                done = true;
                onUncaught.accept(t);
            }
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(due - clock.absoluteTimeMillis(), TimeUnit.MILLISECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            Timer other = (Timer) o;
            int c = Long.compare(due, other.due);
            return c != 0 ? c : Long.compare(id, other.id);
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            if (done || cancelled) {
                return false;
            }
            cancelled = true;
            timers.remove(this);
            return true;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return done || cancelled;
        }

        @Override
        public Object get() throws InterruptedException, ExecutionException {
            if (cancelled) {
                throw new CancellationException();
            }
            if (!done) {
                throw new IllegalStateException(
                        "ManualExecutor: get() on a timer that has not fired (it would block forever)");
            }
            if (failure != null) {
                throw new ExecutionException(failure);
            }
            return result;
        }

        @Override
        public Object get(long timeout, TimeUnit unit)
                throws InterruptedException, ExecutionException, TimeoutException {
            if (!isDone()) {
                throw new TimeoutException();
            }
            return get();
        }
    }

    private Timer arm(Object task, long delay, long period, TimeUnit unit) {
        long d = Math.max(0, unit.toMillis(delay));
        Timer t = new Timer(task, clock.absoluteTimeMillis() + d, period);
        if (!shutdown) {
            timers.add(t);
        } else {
            t.cancelled = true;
        }
        return t;
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
        return arm(command, delay, 0, unit);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
        return (ScheduledFuture<V>) (ScheduledFuture<?>) arm(callable, delay, 0, unit);
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(
            Runnable command, long initialDelay, long period, TimeUnit unit) {
        if (period <= 0) {
            throw new IllegalArgumentException("period must be > 0");
        }
        return arm(command, initialDelay, unit.toMillis(period), unit);
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(
            Runnable command, long initialDelay, long delay, TimeUnit unit) {
        if (delay <= 0) {
            throw new IllegalArgumentException("delay must be > 0");
        }
        return arm(command, initialDelay, -unit.toMillis(delay), unit);
    }

    @Override
    public void execute(Runnable command) {
        if (command == null) {
            throw new NullPointerException();
        }
        queue.add(command);
    }

    // ------------------------------------------------------------------ driving

    /** Armed timers, in firing order. */
    public List<Timer> armedTimers() {
        List<Timer> l = new ArrayList<>(timers);
        Collections.sort(l);
        return l;
    }

    /**
     * Fires one armed timer now, before its deadline, as if it had been due now: a one-shot timer
     * is gone afterwards; a fixed-rate or fixed-delay one is re-armed one period after now.
     */
    public void fireNow(Timer t) {
        if (!timers.remove(t)) {
            throw new IllegalStateException("timer is not armed");
        }
        t.due = clock.absoluteTimeMillis();
        timers.add(t);
        fire(t);
        drain();
    }

    private void fire(Timer t) {
        timers.remove(t);
        if (t.cancelled) {
            return;
        }
        t.run();
        if (t.period != 0 && !t.cancelled && !t.done) {
            t.due = t.period > 0 ? t.due + t.period : clock.absoluteTimeMillis() - t.period;
            timers.add(t);
        }
    }

    /** Runs queued tasks and timers due now until nothing is left to do. */
    public void drain() {
        depth++;
        try {
            if (depth > 1) {
                return; // re-entrant call from inside a task: the outer loop continues
            }
            long guard = 0;
            while (true) {
                if (++guard > 1_000_000) {
                    throw new IllegalStateException("ManualExecutor: more than 1e6 tasks in one drain");
                }
                Runnable r = queue.poll();
                if (r != null) {
                    try {
                        r.run();
                    } catch (Throwable t) {
                        onUncaught.accept(t);
                    }
                    continue;
                }
                Timer t = timers.peek();
                if (t != null && t.due <= clock.absoluteTimeMillis()) {
                    fire(t);
                    continue;
                }
                break;
            }
        } finally {
            depth--;
        }
    }

    /**
     * Moves time forward to {@code relTarget} (ms since time zero), firing every timer due on the
     * way at its due time. Returns the timers fired, in order.
     */
    public interface FireListener {
        void before(Timer t);

        void after(Timer t);
    }

    /** Brackets each step of {@link #advanceTo} with the manual time it runs at. */
    public interface Bracket {
        void open(long relNow);

        void close();
    }

    public List<Timer> advanceTo(long relTarget, FireListener listener, Bracket bracket) {
        long target = relTarget + baseMillis;
        List<Timer> fired = new ArrayList<>();
        bracket.open(now());
        try {
            drain();
        } finally {
            bracket.close();
        }
        while (true) {
            Timer t = timers.peek();
            if (t == null || t.due > target) {
                break;
            }
            setAbs(Math.max(t.due, clock.absoluteTimeMillis()));
            listener.before(t);
            fired.add(t);
            bracket.open(now());
            try {
                fire(t);
                drain();
            } finally {
                bracket.close();
                listener.after(t);
            }
        }
        setAbs(Math.max(target, clock.absoluteTimeMillis()));
        bracket.open(now());
        try {
            drain();
        } finally {
            bracket.close();
        }
        return fired;
    }

    private void setAbs(long abs) {
        long cur = clock.absoluteTimeMillis();
        if (abs > cur) {
            clock.advanceTime(Duration.ofMillis(abs - cur));
        }
    }

    public int queuedTasks() {
        return queue.size();
    }

    @Override
    public void shutdown() {
        shutdown = true;
    }

    @Override
    public List<Runnable> shutdownNow() {
        shutdown = true;
        List<Runnable> l = new ArrayList<>(queue);
        queue.clear();
        timers.clear();
        return l;
    }

    @Override
    public boolean isShutdown() {
        return shutdown;
    }

    @Override
    public boolean isTerminated() {
        return shutdown && queue.isEmpty();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
        return isTerminated();
    }
}
