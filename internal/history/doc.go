// Package history stores the shared history of cronlock's jobs: per job,
// one record in a JetStream KV bucket (its Record: the last claimed tick,
// the recent runs, the hold of the job's lock, a suspension, a pending
// rerun, a cancel request, a queued tick, a backfill), written with
// compare-and-swap and summarised in headers for a headers-only watch, and
// each run's output under a key of its own.
//
// It owns the stored format: the record's JSON (AppendJSON writes exactly
// what encoding/json would), its headers (Header), and the keys. What the
// scheduler does with a record (claims, holds, results, repairs) is the
// scheduler's; the public wrappers operators' tools use are
// scheduler.History and its types.
package history
