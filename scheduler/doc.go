// Package scheduler runs cron-scheduled jobs on any number of replicas so
// that each tick runs at most once across all of them, and, while some
// replica can reach NATS, at least once.
//
// At a tick every replica tries the job's lock (package lock, key = the job
// name) for Options.AcquireTimeout; the others skip the tick. The holder
// claims the tick in a shared per-job state (a key of the history bucket,
// updated with compare-and-swap) that records the last tick claimed: a tick
// at or before it is never run again. That is what keeps a job that finishes
// in a millisecond from running twice when replica clocks disagree by up to
// a few seconds: the lock alone would be free again by the time a replica
// with a slower clock reaches the same tick.
//
// The job runs with a context that carries a job.RunInfo (tick, attempt,
// owner, fencing token) and is cancelled when the lease is lost, at the
// job's timeout, and at shutdown after Options.ShutdownGrace. The lock is
// released only after the job function has returned and its result has been
// recorded: a result NATS does not take is kept and written as soon as NATS
// answers (within ResultRetryFor), so the history, OnResult and the metrics
// show the run's true status, once. A run left "running" in the history is
// marked abandoned only once its replica is gone (abandon.go).
//
// Ticks that no replica ran (all were down, or NATS was unreachable) are
// recorded as missed by the next claim, with a reason (no_replica, outage;
// overlap for ticks that came while a run of the job held its lock;
// lock_held for ticks found locked by a holder that ran no live run); the
// latest of them is run once, at start-up or as soon as NATS answers after
// an outage, if it is at most Job.StartingDeadline old. A job without
// history catches up nothing, except a one-off (Job.OneOff): its one tick
// is run if it passed at most StartingDeadline ago. Ticks are never run
// in a burst. Ticks follow the NATS server's clock, estimated from the
// JetStream timestamps of the replica's own announcements (offset.go), so
// replicas with skewed clocks agree on when a tick is due.
//
// Run fits an oklog/run group; see the example.
package scheduler
