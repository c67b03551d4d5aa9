package history

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Encoding a job's state is on every claim and every result (twice per
// tick of every job), and encoding/json spends most of its time there on
// the state's sixty-odd times (a MarshalJSON call, an allocation and a
// re-validation of each). AppendJSON writes the same bytes as
// json.Marshal of the state with every run's Output emptied (outputs live
// under their own keys), several times faster; TestStateJSONMatches holds
// it to that. Decoding stays with encoding/json.

// AppendJSON appends the record's JSON to b, without the runs' outputs.
func (st *Record) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, '{')
	if !st.LastTick.IsZero() {
		b, err = appendNamedTime(b, err, `"last_tick":`, st.LastTick)
		b = append(b, ',')
	}
	b = append(b, `"runs":`...)
	if st.Runs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range st.Runs {
			if i > 0 {
				b = append(b, ',')
			}
			b, err = st.Runs[i].appendJSON(b, err)
		}
		b = append(b, ']')
	}
	if st.Seq != 0 {
		b = strconv.AppendUint(append(b, `,"seq":`...), st.Seq, 10)
	}
	if !st.LastSuccess.IsZero() {
		b, err = appendNamedTime(b, err, `,"last_success":`, st.LastSuccess)
	}
	if !st.LastFailure.IsZero() {
		b, err = appendNamedTime(b, err, `,"last_failure":`, st.LastFailure)
	}
	if p := st.Suspended; p != nil {
		b, err = appendNamedTime(b, err, `,"suspended":{"at":`, p.At)
		if p.By != "" {
			b = appendString(append(b, `,"by":`...), p.By)
		}
		if p.Note != "" {
			b = appendString(append(b, `,"note":`...), p.Note)
		}
		b = append(b, '}')
	}
	if p := st.Rerun; p != nil {
		b, err = appendNamedTime(b, err, `,"rerun":{"tick":`, p.Tick)
		b, err = appendNamedTime(b, err, `,"until":`, p.Until)
		b = strconv.AppendInt(append(b, `,"attempts":`...), int64(p.Attempts), 10)
		b = strconv.AppendInt(append(b, `,"interruptions":`...), int64(p.Interruptions), 10)
		b = append(b, '}')
	}
	if st.Definition != "" {
		b = appendString(append(b, `,"definition":`...), st.Definition)
	}
	if p := st.Holder; p != nil {
		b = appendString(append(b, `,"holder":{"owner":`...), p.Owner)
		b = appendString(append(b, `,"lease":`...), p.Lease)
		b = strconv.AppendUint(append(b, `,"token":`...), p.Token, 10)
		b, err = appendNamedTime(b, err, `,"since":`, p.Since)
		b, err = appendNamedTime(b, err, `,"at":`, p.At)
		b = append(b, '}')
	}
	if st.LastToken != 0 {
		b = strconv.AppendUint(append(b, `,"last_token":`...), st.LastToken, 10)
	}
	b, err = st.appendRunControl(b, err)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendRunControl appends the run control's fields: a cancel request,
// the failures in a row, a queued tick (the scheduler's cancel.go, overlap.go).
func (st *Record) appendRunControl(b []byte, err error) ([]byte, error) {
	if p := st.Cancel; p != nil {
		b = appendString(append(b, `,"cancel":{"lease":`...), p.Lease)
		if p.By != "" {
			b = appendString(append(b, `,"by":`...), p.By)
		}
		b, err = appendNamedTime(b, err, `,"at":`, p.At)
		if p.Reason != "" {
			b = appendString(append(b, `,"reason":`...), string(p.Reason))
		}
		b = append(b, '}')
	}
	if st.Failures != 0 {
		b = strconv.AppendInt(append(b, `,"failures":`...), int64(st.Failures), 10)
	}
	if !st.Queued.IsZero() {
		b, err = appendNamedTime(b, err, `,"queued":`, st.Queued)
	}
	if p := st.Backfill; p != nil {
		b, err = appendNamedTime(b, err, `,"backfill":{"from":`, p.From)
		b, err = appendNamedTime(b, err, `,"to":`, p.To)
		b, err = appendNamedTime(b, err, `,"next":`, p.Next)
		b = strconv.AppendInt(append(b, `,"total":`...), int64(p.Total), 10)
		b = strconv.AppendInt(append(b, `,"done":`...), int64(p.Done), 10)
		if p.By != "" {
			b = appendString(append(b, `,"by":`...), p.By)
		}
		b, err = appendNamedTime(b, err, `,"at":`, p.At)
		b = append(b, '}')
	}
	return b, err
}

// appendJSON appends the run's JSON, without Output; an error that came
// before is kept.
func (r *Run) appendJSON(b []byte, err error) ([]byte, error) {
	b = appendString(append(b, `{"job":`...), r.Job)
	if r.ID != 0 {
		b = strconv.AppendUint(append(b, `,"id":`...), r.ID, 10)
	}
	b, err = appendNamedTime(b, err, `,"tick":`, r.Tick)
	if r.Manual {
		b = append(b, `,"manual":true`...)
	}
	if r.Backfill {
		b = append(b, `,"backfill":true`...)
	}
	if r.Parallel {
		b = append(b, `,"parallel":true`...)
	}
	if r.Owner != "" {
		b = appendString(append(b, `,"owner":`...), r.Owner)
	}
	if r.Token != 0 {
		b = strconv.AppendUint(append(b, `,"token":`...), r.Token, 10)
	}
	if r.Attempts != 0 {
		b = strconv.AppendInt(append(b, `,"attempts":`...), int64(r.Attempts), 10)
	}
	if !r.Start.IsZero() {
		b, err = appendNamedTime(b, err, `,"start":`, r.Start)
	}
	if !r.End.IsZero() {
		b, err = appendNamedTime(b, err, `,"end":`, r.End)
	}
	b = appendString(append(b, `,"status":`...), string(r.Status))
	if r.Reason != "" {
		b = appendString(append(b, `,"reason":`...), string(r.Reason))
	}
	if r.Ticks != 0 {
		b = strconv.AppendInt(append(b, `,"ticks":`...), int64(r.Ticks), 10)
	}
	if r.Error != "" {
		b = appendString(append(b, `,"error":`...), r.Error)
	}
	if r.By != "" {
		b = appendString(append(b, `,"by":`...), r.By)
	}
	if r.ExitCode != nil {
		b = strconv.AppendInt(append(b, `,"exit_code":`...), int64(*r.ExitCode), 10)
	}
	return append(b, '}'), err
}

// appendNamedTime appends name and t, unless an error came before.
func appendNamedTime(b []byte, err error, name string, t time.Time) ([]byte, error) {
	if err != nil {
		return b, err
	}
	return appendTime(append(b, name...), t)
}

// appendTime appends t as time.Time.MarshalJSON does. Times it may refuse
// (a year outside 0–9999, a zone 24 hours or more away) go through it.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	_, off := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || off <= -24*3600 || off >= 24*3600 {
		q, err := t.MarshalJSON()
		return append(b, q...), err
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendString appends s as a JSON string. Plain text (printable ASCII
// without the characters encoding/json escapes) is copied; anything else
// goes through encoding/json for its exact escaping.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
