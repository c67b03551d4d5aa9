package history

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// TestStateJSONMatches holds appendJSON to its contract: the bytes of
// json.Marshal of the state with the runs' outputs emptied, for states
// drawn at random over every field, every omitted-when-empty case and
// strings encoding/json escapes.
func TestStateJSONMatches(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(20261130, 8))
	for i := range 3000 {
		st := randomState(rng)
		got, gotErr := st.AppendJSON(nil)
		want, wantErr := json.Marshal(withoutOutputs(st))
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("state %d: error %v, encoding/json's %v", i, gotErr, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("state %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestStateJSONRefusesWhatEncodingJSONRefuses: a time JSON cannot carry.
func TestStateJSONRefusesWhatEncodingJSONRefuses(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600)),
	} {
		st := Record{Runs: []Run{{Job: "j", Tick: at, Status: StatusSucceeded}}}
		if _, err := st.AppendJSON(nil); err == nil {
			t.Errorf("%v: no error", at)
		}
		if _, err := json.Marshal(st); err == nil {
			t.Errorf("%v: encoding/json took it: the test's premise is wrong", at)
		}
	}
}

func withoutOutputs(st Record) Record {
	if st.Runs != nil {
		runs := make([]Run, len(st.Runs))
		copy(runs, st.Runs)
		for i := range runs {
			runs[i].Output = ""
		}
		st.Runs = runs
	}
	return st
}

var stateStrings = []string{
	"", "backup", "bench.job-0001", "host-1/42", `quote " and \ backslash`, "<script>&amp;</script>",
	"tab\tnew\nline\x01", "café ☕", "bad utf-8 \xff\xfe", "line\u2028sep\u2029", "\x7f del",
	// each character encoding/json escapes, alone
	`a"b`, `a\b`, "a<b", "a>b", "a&b", "a\x1fb", "a\u00e9b",
}

func randomState(rng *rand.Rand) Record {
	st := Record{LastTick: randomTime(rng), Seq: uint64(rng.IntN(3)) * rng.Uint64N(1<<40),
		LastSuccess: randomTime(rng), LastFailure: randomTime(rng)}
	if n := rng.IntN(5); n > 0 {
		st.Runs = make([]Run, n-1) // n == 1: empty, not nil
		for i := range st.Runs {
			st.Runs[i] = randomRun(rng)
		}
	}
	if rng.IntN(3) == 0 {
		st.Suspended = &Suspension{At: randomTime(rng), By: randomString(rng), Note: randomString(rng)}
	}
	if rng.IntN(3) == 0 {
		st.Rerun = &Rerun{Tick: randomTime(rng), Until: randomTime(rng), Attempts: rng.IntN(4) - 1, Interruptions: rng.IntN(3)}
	}
	if rng.IntN(2) == 0 {
		st.Definition = randomString(rng) // "" included: omitted
	}
	if rng.IntN(2) == 0 {
		st.Holder = &Hold{Owner: randomString(rng), Lease: randomString(rng), Token: rng.Uint64(), Since: randomTime(rng), At: randomTime(rng)}
	}
	st.LastToken = uint64(rng.IntN(2)) * rng.Uint64()
	if rng.IntN(2) == 0 {
		st.Cancel = &CancelRequest{Lease: randomString(rng), By: randomString(rng), At: randomTime(rng), Reason: Reason(randomString(rng))}
	}
	st.Failures = rng.IntN(3) * rng.IntN(1000)
	st.Queued = randomTime(rng)
	if rng.IntN(2) == 0 {
		st.Backfill = &Backfill{From: randomTime(rng), To: randomTime(rng), Next: randomTime(rng), Total: rng.IntN(1000),
			Done: rng.IntN(3), By: randomString(rng), At: randomTime(rng)}
	}
	return st
}

func randomRun(rng *rand.Rand) Run {
	r := Run{Job: randomString(rng), ID: uint64(rng.IntN(2)) * rng.Uint64(), Tick: randomTime(rng), Manual: rng.IntN(2) == 0, Backfill: rng.IntN(2) == 0, Parallel: rng.IntN(2) == 0,
		Owner: randomString(rng), Token: uint64(rng.IntN(2)) * rng.Uint64(), Attempts: rng.IntN(3),
		Start: randomTime(rng), End: randomTime(rng), Status: RunStatus(randomString(rng)), Reason: Reason(randomString(rng)),
		Ticks: rng.IntN(3) * rng.IntN(100000), Error: randomString(rng), By: randomString(rng), Output: randomString(rng),
		Previous: RunStatus(randomString(rng))}
	if rng.IntN(2) == 0 {
		code := rng.IntN(300) - 20
		r.ExitCode = &code
	}
	return r
}

func randomString(rng *rand.Rand) string {
	return stateStrings[rng.IntN(len(stateStrings))]
}

// randomTime is zero a third of the time; else a time in any of a few
// zones, with or without fractions of a second.
func randomTime(rng *rand.Rand) time.Time {
	if rng.IntN(3) == 0 {
		return time.Time{}
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+1800), time.FixedZone("", -7*3600), time.Local}
	t := time.Unix(rng.Int64N(4e9), 0).In(zones[rng.IntN(len(zones))])
	if rng.IntN(2) == 0 {
		t = t.Add(time.Duration(rng.Int64N(1e9)))
	}
	return t
}

// BenchmarkStateJSON: encoding a job's state of 20 runs, as every claim
// and result does, with encoding/json and with appendJSON.
func BenchmarkStateJSON(b *testing.B) {
	var st Record
	t0 := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	for i := range 20 { // the default history size
		tick := t0.Add(time.Duration(i) * time.Second)
		st.Add(Run{Job: "bench.job-0001", Tick: tick, Owner: "host-1234-abcdef", Token: 123456 + uint64(i), Attempts: 1,
			Start: tick.Add(345678912 * time.Nanosecond), End: tick.Add(346678912 * time.Nanosecond), Status: StatusSucceeded})
	}
	st.LastTick = st.Runs[len(st.Runs)-1].Tick
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(withoutOutputs(st)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("appendJSON", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.AppendJSON(make([]byte, 0, 256+256*len(st.Runs))); err != nil {
				b.Fatal(err)
			}
		}
	})
}
