package main

import (
	"context"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be re-executed as a client, as the command
// re-executes itself.
func TestMain(m *testing.M) {
	if os.Getenv(clientEnv) != "" {
		clientMain()
		return
	}
	os.Exit(m.Run())
}

// TestFloor runs the real multi-process path briefly: 2 client processes,
// 10 keys, 3 s, with a goroutine per job-tick and with a second's writes
// sent together (-batch). Every job-tick of the window must be written
// exactly twice and cost what the floor says: 2 acks + 2 × 2 deliveries
// out of the server.
func TestFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a nats-server for ~5 s")
	}
	t.Parallel()
	for _, batch := range []bool{false, true} {
		t.Run("batch="+strconv.FormatBool(batch), func(t *testing.T) {
			t.Parallel()
			checkFloor(t, batch)
		})
	}
}

func checkFloor(t *testing.T, batch bool) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := config{Clients: 2, Jobs: 10, Duration: 3 * time.Second, Value: 4096, Batch: batch, exe: exe, stderr: testWriter{t}}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := bench(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Clients) != 2 {
		t.Fatalf("%d client reports, want 2", len(res.Clients))
	}
	if res.JobTicks != 30 {
		t.Errorf("%d job-ticks in the window, want 10 jobs × 3 s = 30", res.JobTicks)
	}
	if res.Claims != res.JobTicks || res.Results != res.JobTicks || res.Done != res.JobTicks ||
		res.StoredWrites != uint64(2*res.JobTicks) || res.SecondsShort != 0 {
		t.Errorf("job-ticks %d: claims %d, results %d, done %d, stored writes %d, seconds short %d: want every job-tick written twice",
			res.JobTicks, res.Claims, res.Results, res.Done, res.StoredWrites, res.SecondsShort)
	}
	if res.Conflicts != 0 || res.Errors != 0 {
		t.Errorf("conflicts %d, errors %d (%s): want none", res.Conflicts, res.Errors, res.ErrorSample)
	}
	if !res.OK {
		t.Errorf("result not OK: %+v", res)
	}
	if out := res.Server.OutPerJobTick; out < 5 || out > 8 {
		t.Errorf("server msgs out per job-tick %.2f, want 5–8 (2 acks + 2 × 2 deliveries = 6)", out)
	}
	// Each job-tick's result is delivered to every client; its claim only
	// when the consumer reads it before the result replaces it (history
	// 1: the stream keeps one message per key, and a consumer skips the
	// messages removed before it got to them).
	for _, cs := range res.Clients {
		if cs.DeliveriesPerJT < 1 || cs.DeliveriesPerJT > 2 {
			t.Errorf("client %d: %.2f deliveries per job-tick, want 1–2 (the result, and the claim unless superseded)", cs.Index, cs.DeliveriesPerJT)
		}
	}
	if res.ServerCPUUs <= 0 || res.ClientsCPUUs <= 0 || res.CPUUs <= 0 {
		t.Errorf("CPU per job-tick: server %.0f µs, clients %.0f µs: want > 0", res.ServerCPUUs, res.ClientsCPUUs)
	}
	var sb strings.Builder
	printSummary(&sb, res)
	t.Log(sb.String())
}

// TestDealt: dealing is fnv32a(key + second) % N, as hash/fnv computes
// it, and spreads the job-ticks over the clients.
func TestDealt(t *testing.T) {
	t.Parallel()
	counts := make([]int, 3)
	for i := range 3000 {
		key, sec := keyName(i%100), strconv.Itoa(1700000000+i/100)
		h := fnv.New32a()
		h.Write([]byte(key + sec))
		got := dealt(key, sec, 3)
		if want := h.Sum32() % 3; got != want {
			t.Fatalf("dealt(%s, %s) = %d, want %d", key, sec, got, want)
		}
		counts[got]++
	}
	for i, n := range counts {
		if n < 800 || n > 1200 {
			t.Errorf("client %d dealt %d of 3000 job-ticks", i, n)
		}
	}
	if n := len(windowTicks(time.Unix(10, 0), time.Unix(13, 0))); n != 3 {
		t.Errorf("windowTicks [10, 13) = %d seconds, want 3", n)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
