// Package kv is the one place that speaks JetStream Key-Value at the
// message level for cronlock: it creates, opens and checks buckets, names
// their stream and subjects, writes with compare-and-swap on a key's last
// revision (optionally with a per-message TTL), places purge markers, reads
// a key's last message with a direct get, follows a bucket's writes, and
// recognises a failed compare-and-swap.
//
// The lock and the run history are its clients. It knows nothing of locks,
// leases, jobs or schedules: values are opaque bytes and headers.
package kv
