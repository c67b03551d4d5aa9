// Command cronlock runs scheduled jobs on many replicas; each tick of each
// job runs on exactly one of them, coordinated through NATS JetStream.
//
// Usage:
//
//	cronlock run      [-c FILE]                              run the scheduler
//	cronlock validate [-c FILE] [--from TIME]                check the file, print each job's next three runs
//	cronlock next     [-c FILE] [-n N] [--from TIME] [JOB]   next N (default 5) run times
//	cronlock locks    [-c FILE] [--json]                     who holds which lock
//	cronlock status   [-c FILE] [-n N] [--json]              each job's last N (default 5) runs
//	cronlock trigger  [-c FILE] JOB                          run one job once now, under its lock
//	cronlock unlock   [-c FILE] --force JOB                  force-release a job's lock
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
// not-acquired trigger, a lock that is not held); 2 bad usage or a bad
// configuration file, whose errors are printed one a line as
// FILE:LINE: FIELD: MESSAGE, or a crontab with lines `import crontab` could
// not convert, printed as CRONTAB:LINE: REASON (hint: ...) after the
// converted jobs were written.
//
// # Reaching NATS
//
// `cronlock run` connects to nats.url, or, when it is empty, starts an
// embedded single-node nats-server with JetStream on nats.embedded.store_dir
// (listening on nats.embedded.listen if set).
//
// The operator commands (locks, status, trigger, unlock) connect to nats.url
// if set; else to nats.embedded.listen if set and a `cronlock run` answers
// there; else they start an embedded server of their own on store_dir. The
// last works only while no `cronlock run` uses that store: cronlock locks the
// store directory, and the command fails with a message suggesting
// nats.embedded.listen.
//
// # Output formats
//
// next prints one RFC 3339 time a line for JOB, or "JOB TIME" lines for every
// job, in each job's time zone. locks --json prints an array of
// {"key","owner","token","acquired_at","expires_at","expires_in_seconds"};
// status --json an array of {"job","runs":[...]} with each run's "tick",
// "manual", "owner", "token", "attempts", "start", "end",
// "duration_seconds", "status" and "error", newest first.
//
// The NATS permissions cronlock needs are in internal/app/PERMISSIONS.md.
//
// `cronlock version` prints the version set at link time with
// -ldflags "-X github.com/cronlock/cronlock/internal/app.version=v1.2.3",
// else the module version (go install), else the VCS revision.
package main
