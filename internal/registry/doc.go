// Package registry is the replica registry: each running scheduler
// announces itself under a key of the replicas bucket with a TTL, follows
// the others' announcements, and judges which replicas are live on the
// NATS server's clock. The announcements also sample that clock: the
// replica's own writes come back on its watch stamped by the server, which
// gives the clock offset estimate (OffsetEstimate) and the server-clock
// follower (ServerClock) that the liveness rule measures ages with.
//
// It knows nothing of jobs, ticks or history: the scheduler hands it the
// list of jobs running now and reads back the live set, a replica's
// announcement and the offset. The announcement's JSON is a stored format
// that replicas of other releases read: its field names do not change.
package registry
