package scheduler

// Bounding the claims in flight. When many jobs fall due at once (10,000
// hourly jobs at minute 0, daily jobs at midnight), every due job used to
// send its claim at once: at 20,000 jobs due in the same second on 3
// replicas and 2 cores, the server's queue grew past AcquireTimeout, most
// claims timed out ("tick skipped: NATS failed"), the lower-ranked
// replicas' turns came while the dealt replica's claims still queued and
// raced them, registry heartbeats waited behind the claims until replicas
// were taken for gone, and 60–99 % of such a second's ticks were missed.
//
// A replica sends at most maxClaimsInFlight claims at a time; the others
// wait for a place in order of arrival, before their AcquireTimeout
// starts, and a wait ends without a request when the watch delivers
// another replica's claim of the tick. A burst then runs at the rate the
// server stores claims, late but once, and the replica's other requests
// (results, heartbeats) wait behind at most maxClaimsInFlight claims.
// Results are not bounded: each frees a lock, and there are never more of
// them than claims.
//
// The bound is far above what a steady rate keeps in flight: a claim is a
// round trip of 1–3 ms at light load, so 1,000 job-ticks/s on 3 replicas
// keep about 1 claim in flight per replica, and 4,000/s at most a few
// dozen.
const maxClaimsInFlight = 128
