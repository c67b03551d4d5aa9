package chaos

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChaos is the CI mode: a 3-node NATS cluster, five cronlock replicas
// behind proxies, every fault kind once in an order drawn from the seed,
// then a clean shutdown and the checks. Replay a failure with
//
//	CHAOS_SEED=N go test -run TestChaos -v ./internal/chaos/
//	go run ./internal/chaos/cmd/chaos -short -seed N
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: starts real processes for about 90 s")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED: %v", err)
		}
		seed = n
	}
	t.Logf("seed %d (replay: CHAOS_SEED=%d go test -run TestChaos -v ./internal/chaos/)", seed, seed)
	ctx, cancel := context.WithTimeout(context.Background(), 170*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "chaos-test-")
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	res, err := Run(ctx, Config{Seed: seed, Short: true, Dir: dir, Log: &log})
	if err != nil {
		t.Log(log.String())
		t.Fatalf("seed %d: %v (work dir kept: %s)", seed, err, dir)
	}
	var out strings.Builder
	res.Report.Fprint(&out, res.History, !res.Report.OK())
	if !res.Report.OK() {
		t.Log(log.String())
		t.Log(out.String())
		t.Fatalf("seed %d: %d violations (work dir kept: %s)", seed, len(res.Report.Violations), dir)
	}
	os.RemoveAll(dir)
	if testing.Verbose() {
		t.Log(out.String())
	}
	// Every fault kind was injected, and the system did work.
	for _, k := range FaultKinds {
		if res.Report.FaultsByKind[k] != 1 {
			t.Errorf("fault %s injected %d times, want 1", k, res.Report.FaultsByKind[k])
		}
	}
	if res.Report.EligibleRan == 0 || res.Report.RunsByJob["long.a"] == 0 || res.Report.RunsByJob[QueueJob] == 0 || res.Report.RunsByJob[ReplaceJob] == 0 {
		t.Errorf("too little work done: %+v", res.Report.RunsByJob)
	}
	// The group's limit was reached (so the check of it had something to
	// hold), as the jobs due at once outnumber its slots.
	if g := res.Report.RunControl.Groups; len(g) != 1 || g[0].MaxObserved != GroupMaxRunning {
		t.Errorf("group report %+v: want %d runs at once at most, reached", g, GroupMaxRunning)
	}
}
