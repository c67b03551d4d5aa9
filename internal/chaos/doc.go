// Package chaos is cronlock's fault-injection harness. It runs real
// processes, injects faults, and checks the recorded history afterwards.
//
// # Set-up
//
//   - A three-node JetStream cluster of nats-server processes built from
//     the nats-server module in go.mod, each with a monitoring port (the
//     harness reads /jsz?streams=true every 100 ms to find stream
//     leaders) and
//     cluster.no_advertise, so that clients only know the URLs they were
//     given.
//   - Five cronlock replicas (go build ./cmd/cronlock), each reaching the
//     three nodes through its own three proxies (a ProxyGroup): every byte
//     of a replica's NATS traffic can be passed, delayed, black-holed or cut
//     together. The lock bucket is R3, the lease 2 s, renewal every 500 ms.
//   - Jobs: three every-second jobs that take 5 ms (tick.a, tick.b,
//     tick.c; starting_deadline 5 s) and two every-second jobs that run
//     for 2.5 and 3.5 leases (long.a, long.b). Run control (see
//     runControlJobs): queue.a (overlap: queue, every 2 s, running
//     2.5–3.5 s), replace.a (overlap: replace, every second, running 2.5 s
//     unless replaced) and grp.a–grp.e, the five jobs of concurrency group
//     chaos (max_running 2), due at once every 5 s, running 3 s (grp.a,
//     beyond the lease) and 700 ms, with starting_deadline 4 s. Each job is this package's recorder (the harness's
//     own executable with CHAOS_RECORD=1, see MaybeRecord): it appends a
//     start line {job, tick, token, replica, pid, time} to a per-replica
//     file with O_APPEND, writes to the Fence (a resource keyed by job that
//     rejects a token lower than the highest it has seen) at once, every
//     100 ms while it runs and once more before it ends, and appends an end
//     line with its status (ok, fenced, signal). A SIGKILLed run leaves a
//     start without an end; the harness also notes when such a process
//     exited (a pidfd per run; polling every 50 ms as a fallback).
//
// # Faults
//
// kill (SIGKILL of a replica, restarted 1–4 s later), kill-mid-run (of a
// replica while it runs a job, preferably a long one), pause (SIGSTOP of the
// cronlock process for lease+0.5–2.5 s: its job keeps running, as a holder
// whose supervisor stalls), pause-tree (SIGSTOP of cronlock and all its
// descendants: a frozen host), cut (connections closed and refused for
// 1.5–3 leases), blackhole (traffic silently held, likewise), delay (every
// byte delayed 100 ms–1 s for 3–8 s), nats-kill (SIGKILL or SIGTERM of one
// node, restarted 2–6 s later), nats-leader-kill (the same, of the lock
// stream's leader), nats-outage (every node down for lease+1–4 s) and
// rolling-restart (each replica SIGTERMed, its exit code checked, restarted
// and awaited in turn). Replica faults hit the replica running a long job
// half of the time. Faults are sequential; before the next one the harness
// restarts any replica that is down and waits for both streams to have a
// leader. Every random choice comes from the seed.
//
// # Checks
//
// See Check. In short: no two runs of a job overlap unless the stale one's
// whole host was frozen (pause-tree) and the fence rejected it (or it wrote
// nothing after the newer run's first write) — under a pause of cronlock
// alone the job's shim must kill the job at the lease's local safe
// deadline, so no overlap is excused there; fencing tokens never go
// backwards; no tick runs twice; every short-job tick at which NATS had a
// quorum and leaders for the lock and history streams ran, and the others
// are listed with their cause; the group never has more than max_running
// runs at once (a run on a frozen host excepted), and a tick that came
// during a queue or replace run runs within FollowLatency of its end (runs
// near a fault that could delay the hand-over are not held to it; see
// checkFollowOn); after the final SIGTERM every replica exits
// 0, no lock is held, no job or shim process is left. Measured, not
// checked: the takeover delay of a long job after a fault on its holder,
// and after each NATS fault the catch-up, from the streams having leaders
// again to every short job having run again (the short jobs have a
// starting_deadline, so the latest missed tick runs at once; see CatchUp).
// A run killed without its end line ends when its process exited, as a
// pidfd reports it, not when polling noticed.
//
// # Modes
//
// go test ./internal/chaos/ runs TestChaos, every fault kind once (about 80
// s; skipped with -short; CHAOS_SEED=N replays). The command
// ./internal/chaos/cmd/chaos runs random faults for -duration.
//
// It owns the test cluster, proxies, faults, the external run record and
// the checks; it knows cronlock only as a binary, a config file and its
// jobs' records, and the product never imports it.
package chaos
