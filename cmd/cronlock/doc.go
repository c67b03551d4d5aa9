// Command cronlock runs scheduled jobs on many replicas; each tick of each
// job runs on exactly one of them, coordinated through NATS JetStream.
//
// Usage:
//
//	cronlock run      [-c FILE]                              run the scheduler
//	cronlock validate [-c FILE] [--from TIME]                check the file, print each job's next three runs
//	cronlock next     [-c FILE] [-n N] [--from TIME] [JOB]   next N (default 5) run times
//	cronlock locks    [-c FILE] [--json]                     who holds which lock
//	cronlock status   [-c FILE] [-n N] [-v] [--json] [JOB...]  each job's (or each JOB's) last N (default 5) runs, with output
//	cronlock trigger  [-c FILE] [--timeout D] [--no-wait | --local] JOB
//	                                                         have a replica run one job once now, under its lock
//	cronlock unlock   [-c FILE] --force JOB                  force-release a job's lock
//	cronlock suspend  [-c FILE] JOB                          stop every replica from starting JOB's ticks
//	cronlock resume   [-c FILE] JOB                          let replicas start JOB's ticks again
//	cronlock replicas [-c FILE] [--json]                     list the running replicas
//	cronlock import crontab [-o FILE] [--system] [--timezone ZONE] CRONTAB
//	                                                         convert a crontab (- for stdin) into a configuration
//	cronlock version
//	cronlock help [COMMAND]
//
// -c and --config are the same flag; without it the file is
// $CRONLOCK_CONFIG, else cronlock.yaml. Flags use Go's flag package: -x and
// --x are the same, and flags must come before positional arguments
// ("cronlock trigger -c prod.yaml backup"; a flag after JOB is an error).
// Every command accepts --help (-h), which prints its usage to stdout.
//
// Exit codes: 0 ok; 1 runtime failure (NATS unreachable, a failed or
// not-acquired trigger, a lock that is not held); 2 bad usage (including a
// JOB the configuration does not define, for status, trigger, suspend and resume) or a bad
// configuration file, whose errors are printed one a line as
// FILE:LINE: FIELD: MESSAGE, or a crontab with lines `import crontab` could
// not convert, printed as CRONTAB:LINE: REASON (hint: ...) after the
// converted jobs were written; 3 no replica took a trigger request within
// its --timeout.
//
// # Triggering a job
//
// trigger sends a request on the NATS subject
// cronlock.<history.bucket>.trigger.<JOB>. The replicas that have JOB in
// their configuration, not suspended there, subscribe to it in one queue
// group, so exactly one of them takes the request; it runs JOB at once
// under its lock (a manual run in the history, as from the status page)
// and answers with the run's ID, owner and token. trigger prints them
// ("JOB: run ID started on OWNER (token T)"), then reads the run's result
// from the shared history and prints "JOB: STATUS in DURATION on OWNER (run
// ID, exit code N)" and the output tail. It asks again while no replica is
// subscribed or the one asked is shutting down, for up to --timeout
// (default 10s), then exits 3. The wait for the result has no limit of its
// own (the job's timeout bounds the run); when the run's lock is gone and no
// result came 5s later (its replica died: the lock expires after
// lock.lease) it exits 1. SIGINT stops the wait, not the run. --no-wait
// exits 0 once the run has started; --local runs JOB in this process, as
// trigger did before. Without nats.url, trigger connects to
// nats.embedded.listen and never starts an embedded server of its own.
//
// # Reaching NATS
//
// `cronlock run` connects to nats.url, or, when it is empty, starts an
// embedded single-node nats-server with JetStream on nats.embedded.store_dir
// (listening on nats.embedded.listen if set).
//
// The operator commands (locks, status, logs, trigger, unlock, suspend, resume,
// replicas) connect to nats.url
// if set; else to nats.embedded.listen if set and a `cronlock run` answers
// there; else they start an embedded server of their own on store_dir. The
// last works only while no `cronlock run` uses that store: cronlock locks the
// store directory, and the command fails with a message suggesting
// nats.embedded.listen. Where store_dir holds no store (no `cronlock run`
// used it yet, or the configuration is not the daemon's), they fail (exit
// 1) naming the absolute path they looked at, and create nothing. Relative
// paths in the file are relative to the file's folder, so the commands find
// the daemon's store from any working directory. next reads which jobs are suspended from nats.url or
// nats.embedded.listen only, never starting a server; when NATS does not
// answer it warns and prints the times anyway.
//
// # Suspending jobs
//
// suspend records the suspension in the shared history in NATS, labelled
// "<user>@<host> (cronlock suspend)": within a second every replica stops
// starting the job's ticks and records them as skipped (reason suspended);
// a run in progress is not stopped. resume lifts it; the skipped ticks are
// not caught up. A job with suspended: true in the configuration is
// suspended whatever the shared state says. status marks a suspended job
// "(suspended)" and says since when and by whom; next ends its lines with
// "(suspended)".
//
// # Output formats
//
// next prints one RFC 3339 time a line for JOB, or "JOB TIME" lines for every
// job, in each job's time zone. locks --json prints an array of
// {"key","owner","token","acquired_at","expires_at","expires_in_seconds"}.
//
// status prints a table of runs; under each failed run (every run with -v)
// the tail of its output, each line indented with "    | "; missed and
// skipped entries show their reason (overlap, no_replica, outage,
// lock_held, suspended) and how many ticks they stand for. status --json prints an
// array of {"job","suspended","suspended_at","suspended_by","runs":[...]}
// ("suspended" is true when the shared state or the configuration suspends
// the job; "suspended_at" and "suspended_by" only for a suspension by
// cronlock suspend) with each run's "tick", "manual", "owner", "token",
// "attempts", "start", "end", "duration_seconds", "status", "reason",
// "ticks", "error", "exit_code" and "output", newest first. A running run
// leaves out what it does not have yet: "attempts", "end",
// "duration_seconds", "error", "exit_code" and "output". "exit_code" is
// null for an entry that had no process (missed, skipped, a command that
// never started); "reason" and "ticks" appear on missed and skipped
// entries only.
//
// replicas prints a table of the live replicas announced in NATS (with a
// SEEN column); replicas --json an array of {"id","host","pid","version",
// "started","running","clock_offset_seconds","seen"}, "running" being the
// jobs it runs now, "clock_offset_seconds" (the NATS server's clock minus
// the replica's) null until the replica has an estimate, and "seen" the
// time of its last announcement (RFC 3339, UTC), as in /api/replicas. A
// replica that stops leaves the list at once; one not seen for its
// announcement's TTL (6 s, by the server's clock) is not listed, even if
// NATS still holds its announcement.
//
// The NATS permissions cronlock needs are in internal/app/PERMISSIONS.md.
//
// `cronlock version` prints the version set at link time with
// -ldflags "-X github.com/cronlock/cronlock/internal/app.version=v1.2.3",
// else the module version (go install), else the VCS revision.
package main
