// Package proc runs one job's external command as a process group that never
// outlives cronlock.
//
// # Process model
//
// Run does not start the job directly. It re-executes the running binary
// (/proc/self/exe) as a small supervisor, the "shim", in a new process group
// of which the shim is the leader. The shim starts the job in that same group
// and waits for it. The process tree of one run is therefore
//
//	cronlock ── shim (pgid leader) ── job ── job's children ...
//	            \_________________ one process group ________/
//
// The binary must call Init first thing in main (and in TestMain of test
// binaries that call Run): in the shim, Init runs the supervisor and exits.
// The shim is recognised by an environment variable that Init removes before
// the job starts, so the job never sees it.
//
// # Lifeline and status channel
//
// Run hands the shim one end of a Unix socketpair as file descriptor 3 and
// keeps the other end, close-on-exec, until the shim has exited. The shim reads
// from fd 3; end of file means every copy of cronlock's end is gone, i.e.
// cronlock died (even by SIGKILL), and the shim sends SIGKILL to its whole
// process group, itself included. This does not depend on signals reaching the
// shim or on the thread that forked it, unlike Linux's parent-death signal.
//
// The same socket carries the job's result back: when the job ends the shim
// writes one line, "exit N" or "signal N" (or "error MESSAGE" if the job could
// not be started), before exiting. Run prefers that line; without it (the shim
// was killed first) Run reports the shim's own wait status. The shim's exit
// code mirrors the result (N, 128+signal, or 127 for a start error) for humans
// only.
//
// # Lease deadline
//
// The socket also carries messages the other way: Run writes
// "deadline N" whenever Command.Deadline reports a new lease deadline, N
// being that moment on CLOCK_MONOTONIC in nanoseconds (0: none). That clock
// is shared by all processes of the host and does not jump with the wall
// clock. The shim keeps the latest deadline and, once the clock passes it,
// reports "deadline" and SIGKILLs its whole group, itself included. So a
// job stops before its lease can expire on the server even when cronlock
// is frozen (SIGSTOP, a stuck runtime, a debugger) and cannot stop it. A
// shim frozen together with its job checks the clock when thawed (its
// timer has expired, and SIGCONT wakes it too) and kills the group at once.
//
// # Stopping
//
// When Run's context is done it sends SIGTERM to the whole group (followed by
// SIGCONT, so that stopped processes act on it), then SIGKILL after
// Command.Grace (at once with Command.NoGrace). The shim catches SIGTERM,
// SIGINT and SIGHUP (it does not ignore them: an ignored disposition would be
// inherited by the job) and keeps waiting; the job receives the group signal
// itself.
//
// When the job's main process ends, anything it left behind in the group
// (background children) is stopped the same way: the shim, which is a child
// subreaper so that orphaned descendants are re-parented to it, sends SIGTERM
// to the group, waits up to Grace for all its descendants to exit, then sends
// SIGKILL. As a backstop Run itself sends SIGKILL to the group after the shim
// has exited but before reaping it, so the group id cannot have been recycled.
// Run returns only when the shim has been reaped and the job's output has been
// drained.
//
// # Limits
//
//   - A descendant that leaves the process group (setsid, setpgid, a
//     double-forking daemon that does so) receives none of these signals and
//     may outlive cronlock. While the shim lives such a process is still its
//     descendant, so it delays the end of the run by up to Grace.
//   - If such a process keeps the job's stdout or stderr open, Run stops
//     waiting for output Grace (at least a second) after the shim has exited.
//   - If the shim alone is killed, Run kills the group; if cronlock and the
//     shim are killed at the same instant nothing is left to do so.
//   - Re-executing cronlock (exec without fork) closes the lifeline and so
//     kills all running jobs, by design.
//   - Only Linux is supported; elsewhere Run returns an error.
//
// # What it owns and must not know
//
// It owns one command's process tree, its output and its end. It must not
// know locks, leases or the scheduler: the lease reaches it only as a
// job.DeadlineFunc, and a stop as a cancelled context (StopCause).
package proc
