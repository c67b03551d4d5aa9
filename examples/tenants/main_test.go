package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/examples/internal/extest"
	"github.com/cronlock/cronlock/internal/natstest"
)

// Two replicas of the service on one server: the tenants' report jobs,
// put at run time by one of them, run on both replicas' schedulers with
// each tenant's tick once; a deleted tenant's report stops.
func TestTenantsOnTwoReplicas(t *testing.T) {
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	a := extest.Start(t, run, "-nats", url, "-schedule", "* * * * * *", "-delete-after", "4s")
	b := extest.Start(t, run, "-nats", url, "-schedule", "* * * * * *", "-seed=false")
	sent := regexp.MustCompile(`"tenant":"(\w+)","tick":"([^"]+)".*"message":"report sent"`)
	runs := func() map[string]int {
		count := map[string]int{}
		for _, w := range []*extest.Example{a, b} {
			for _, m := range sent.FindAllStringSubmatch(w.Out.String(), -1) {
				count[m[1]+" "+m[2]]++
			}
		}
		return count
	}
	a.WaitFor(`"message":"tenant's report deleted"`, 20*time.Second)
	deleted := time.Now()
	time.Sleep(1500 * time.Millisecond) // a run started before the delete ends within this
	before := runs()
	time.Sleep(2 * time.Second)
	after := runs()
	tenants := map[string]int{}
	for k, n := range after {
		if n > 1 {
			t.Errorf("%s ran %d times", k, n)
		}
		tenants[strings.Fields(k)[0]]++
		if strings.HasPrefix(k, "globex ") && before[k] == 0 {
			t.Errorf("globex's report ran after it was deleted (%v ago): %s", time.Since(deleted), k)
		}
	}
	if tenants["acme"] < 3 || tenants["globex"] < 1 {
		t.Errorf("reports per tenant = %v, want acme's going on and globex's until its delete:\n%s\n%s", tenants, a.Out.String(), b.Out.String())
	}
	for _, w := range []*extest.Example{a, b} {
		if err := w.Stop(10 * time.Second); err != nil {
			t.Fatalf("run: %v", err)
		}
	}
}
