// Package app wires cronlock together from a validated configuration: the
// NATS connection (or an embedded nats-server), the lock.Locker, the
// scheduler.Scheduler with one job.Job per configured job, the HTTP server
// for /metrics, /healthz and /readyz, and configuration reload on SIGHUP.
//
// The cronlock command (cmd/cronlock) parses flags, loads the file with
// config.Load and calls into this package; everything with a lifecycle lives
// here so that it can be tested in-process against a real nats-server.
//
// # Reaching NATS
//
// The daemon (NewDaemon) connects to nats.url when it is set, reconnecting
// forever with jittered exponential backoff. Otherwise it starts nats-server
// in-process with JetStream stored under nats.embedded.store_dir, holding an
// exclusive lock on that directory for its lifetime (nats-server itself does
// not stop two servers from sharing a store). With nats.embedded.listen set
// the embedded server also accepts TCP clients there.
//
// Operator commands (Dial) connect to nats.url if set; else to
// nats.embedded.listen if set and something answers there (a running daemon on
// this host); else they start their own embedded server on store_dir, which
// works only while no daemon holds the store (ErrStoreInUse otherwise).
//
// # Triggers
//
// The daemon takes `cronlock trigger` requests on the core NATS subject
// cronlock.<history.bucket>.trigger.<job> (trigger.go), in a queue group so
// that one replica runs each; the client (Client.TriggerRemote,
// Client.AwaitRun) reads the result from the shared history.
//
// PERMISSIONS.md in this directory lists the NATS permissions a cronlock user
// needs.
//
// # What it owns and must not know
//
// It owns lifecycles: connection, buckets, daemon, reload, HTTP, the
// notifier, operator sessions (Client). It must not know how locks, claims or
// histories are stored (it calls lock and scheduler), nor how a command
// process is supervised (internal/proc); cmd/cronlock stays a thin layer of
// flags and output above it.
package app
