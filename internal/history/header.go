package history

import (
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// Headers on every write of a job's record, so that replicas follow
// claims, holds, suspensions, reruns and results with a headers-only watch
// instead of fetching whole records. Each is additive: a release that
// does not know one ignores it, and a write from a release that did not
// set it lacks it.
const (
	LastTickHeader    = "Cronlock-Last-Tick"    // RFC 3339 (nanoseconds)
	SuspendedHeader   = "Cronlock-Suspended"    // "1" while suspended
	RerunHeader       = "Cronlock-Rerun"        // the tick waiting for a rerun
	LastSuccessHeader = "Cronlock-Last-Success" // Unix seconds
	LastFailureHeader = "Cronlock-Last-Failure" // Unix seconds
	// HolderHeader carries the holding lease; absent while the lock is free.
	HolderHeader = "Cronlock-Holder"
	// TokenHeader carries the record's last fencing token (Record.LastToken),
	// so a replica notices a token handed out twice: the record went back
	// in time, which a stream that lost acknowledged writes does.
	TokenHeader = "Cronlock-Token"
	// CancelHeader carries the lease a cancel request is for.
	CancelHeader = "Cronlock-Cancel"
	// QueuedHeader carries the tick waiting for the job's run to end.
	QueuedHeader = "Cronlock-Queued"
	// BackfillHeader carries the next tick a backfill considers.
	BackfillHeader = "Cronlock-Backfill"
	// DefinitionHeader carries the record's Definition.
	DefinitionHeader = "Cronlock-Definition"
	// RunningOnHeader has one value per owner with a run of the job
	// "running".
	RunningOnHeader = "Cronlock-Running-On"
)

// RunIDHeader is on an output: the ID of the run it is the output of.
const RunIDHeader = "Cronlock-Run"

// Header summarises st for the watch (see the header constants).
func Header(st *Record) nats.Header {
	hdr := nats.Header{}
	if !st.LastTick.IsZero() {
		hdr.Set(LastTickHeader, st.LastTick.UTC().Format(time.RFC3339Nano))
	}
	if st.Suspended != nil {
		hdr.Set(SuspendedHeader, "1")
	}
	if st.Rerun != nil {
		hdr.Set(RerunHeader, st.Rerun.Tick.UTC().Format(time.RFC3339Nano))
	}
	if !st.LastSuccess.IsZero() {
		hdr.Set(LastSuccessHeader, strconv.FormatInt(st.LastSuccess.Unix(), 10))
	}
	if !st.LastFailure.IsZero() {
		hdr.Set(LastFailureHeader, strconv.FormatInt(st.LastFailure.Unix(), 10))
	}
	addRunningOn(hdr, st)
	if st.Holder != nil {
		hdr.Set(HolderHeader, st.Holder.Lease)
	}
	if st.Cancel != nil {
		hdr.Set(CancelHeader, st.Cancel.Lease)
	}
	if !st.Queued.IsZero() {
		hdr.Set(QueuedHeader, st.Queued.UTC().Format(time.RFC3339Nano))
	}
	if st.Backfill != nil {
		hdr.Set(BackfillHeader, st.Backfill.Next.UTC().Format(time.RFC3339Nano))
	}
	if st.LastToken != 0 {
		hdr.Set(TokenHeader, strconv.FormatUint(st.LastToken, 10))
	}
	if st.Definition != "" {
		hdr.Set(DefinitionHeader, st.Definition)
	}
	return hdr
}

// addRunningOn adds RunningOnHeader for the owners of st's runs in progress.
func addRunningOn(hdr nats.Header, st *Record) {
	var owners []string
	for _, r := range st.Runs {
		if r.Status == StatusRunning && r.Owner != "" && !slices.Contains(owners, r.Owner) {
			owners = append(owners, r.Owner)
			hdr.Add(RunningOnHeader, r.Owner)
		}
	}
}
