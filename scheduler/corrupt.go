package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/history"
	"github.com/cronlock/cronlock/internal/kv"
)

// Headers on the copy of a corrupt record.
const (
	corruptRevisionHeader = "Cronlock-Corrupt-Revision" // the record's revision
	corruptErrorHeader    = "Cronlock-Corrupt-Error"    // why it did not decode
)

// corruptKey is where the bytes of the job's record at rev are kept once
// it was found corrupt. '/' cannot occur in a job name, so the key never
// meets a job's state, nor an output ("<job>/output/<n>"); the watch and
// the views pass over it.
func corruptKey(name string, rev uint64) string {
	return fmt.Sprintf("%s/corrupt/%d", name, rev)
}

// salvage rebuilds the state of a corrupt record from what can be read,
// keeps the old bytes under corruptKey, and returns the state with the
// note it added (see anomaly.go).
func (h *History) salvage(ctx context.Context, name string, bad *CorruptError) (history.Record, *Run, error) {
	st := salvageJSON(name, bad.Value())
	now, _ := h.repairs.now()
	salvageHeader(&st, bad.Header(), now)
	last, err := h.lastOutputID(ctx, name)
	if err != nil {
		return history.Record{}, nil, err
	}
	st.Seq = max(st.Seq, last) // a new entry never takes the ID of an output still kept
	for _, r := range st.Runs {
		st.Seq = max(st.Seq, r.ID)
	}
	key := corruptKey(name, bad.Revision)
	_, err = h.store.Bucket().Put(ctx, kv.Write{Key: key, Value: bad.Value(), Header: nats.Header{
		corruptRevisionHeader: []string{strconv.FormatUint(bad.Revision, 10)},
		corruptErrorHeader:    []string{bad.Err.Error()},
	}})
	if err != nil && !kv.IsConflict(err) { // a conflict: another replica kept them already
		return history.Record{}, nil, fmt.Errorf("keep the corrupt record of %q: %w", name, err)
	}
	note := st.Add(Run{Job: name, Tick: now.UTC(), Status: StatusAnomaly, Reason: AnomalyCorrupt,
		Error: fmt.Sprintf("the job's record (revision %d) was not a job state: %v; rewritten from what could be read "+
			"(%d run(s), last claimed tick %s); the old bytes are kept under the key %q",
			bad.Revision, bad.Err, len(st.Runs), tickText(st.LastTick), key)})
	return st, &note, nil
}

func tickText(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

// salvageJSON decodes what it can of a record that does not decode as a
// whole: each field of a JSON object on its own, and each run of its runs
// on its own. The pending rerun is dropped.
func salvageJSON(name string, b []byte) history.Record {
	var st history.Record
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return st
	}
	decodeField(fields, "last_tick", &st.LastTick)
	decodeField(fields, "seq", &st.Seq)
	decodeField(fields, "last_success", &st.LastSuccess)
	decodeField(fields, "last_failure", &st.LastFailure)
	decodeField(fields, "suspended", &st.Suspended)
	var runs []json.RawMessage
	decodeField(fields, "runs", &runs)
	for _, raw := range runs {
		var r Run
		if json.Unmarshal(raw, &r) == nil && r.Status != "" {
			r.Job, r.Output = name, ""
			st.Runs = append(st.Runs, r)
		}
	}
	return st
}

// decodeField sets *dst to the field name of fields when it decodes as a T.
func decodeField[T any](fields map[string]json.RawMessage, name string, dst *T) {
	raw, ok := fields[name]
	if !ok {
		return
	}
	var v T
	if json.Unmarshal(raw, &v) == nil {
		*dst = v
	}
}

// salvageHeader fills in, from the headers of the corrupt write, what the
// body did not give: the last claimed tick, a suspension (which must not
// lapse because its record broke), the last success and failure.
func salvageHeader(st *history.Record, hdr nats.Header, now time.Time) {
	v := parseView(hdr)
	if st.LastTick.IsZero() {
		st.LastTick = v.lastTick
	}
	if st.Suspended == nil && v.suspended {
		st.Suspended = &Suspension{At: now.UTC(), By: "unknown (recovered from a corrupt record)"}
	}
	if st.LastSuccess.IsZero() {
		st.LastSuccess = v.lastSuccess
	}
	if st.LastFailure.IsZero() {
		st.LastFailure = v.lastFailure
	}
}

// lastOutputID is the highest run ID among the job's kept outputs (0 if
// none), read from their headers.
func (h *History) lastOutputID(ctx context.Context, name string) (uint64, error) {
	var last uint64
	for i := range h.store.Size() + 1 {
		e, err := h.store.Bucket().Last(ctx, h.store.OutputKey(Run{Job: name, ID: uint64(i)}))
		if err != nil {
			return 0, fmt.Errorf("read the outputs of %q: %w", name, err)
		}
		if e == nil || e.Free {
			continue
		}
		if id, err := strconv.ParseUint(e.Header.Get(history.RunIDHeader), 10, 64); err == nil {
			last = max(last, id)
		}
	}
	return last, nil
}
