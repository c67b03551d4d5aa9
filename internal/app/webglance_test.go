package app_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/webtest"
)

// testGlance: after two failed runs of "flaky" (on replica-a, then on
// replica-b), replica-a's overview shows them as two failed cells with a
// success rate of 0%, replica-b as the last run's owner and the next run
// in the job's zone (Berlin); its job view charts the two runs and shows
// the job's definition.
func (e *webEnv) testGlance(t *testing.T, b *webtest.Browser) {
	b.ClearConsole()
	for i, base := range []string{e.a, e.b} {
		if code, body := post(t, base+"/api/jobs/flaky/trigger", webToken); code != http.StatusOK {
			t.Fatalf("trigger flaky: %d %s", code, body)
		}
		waitFor(t, pageWait, fmt.Sprintf("flaky's run %d to end", i+1), func() bool {
			runs := e.state(t, "flaky").Runs
			return len(runs) == i+1 && runs[0].Finished()
		})
	}
	b.Navigate(e.a + "/")
	row := `#jobs tr[data-job="flaky"]`
	b.WaitCount(row+" .strip .cell", 2, pageWait)
	b.WaitCount(row+" .strip .cell.c-failed", 2, pageWait)
	b.WaitText(row+" .rate", "0%", pageWait)
	b.WaitText(row+" .last-owner", "on replica-b", pageWait)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	next := time.Date(time.Now().In(berlin).Year()+1, 1, 1, 0, 0, 0, 0, berlin)
	b.WaitText(row+" .next", next.Format("2006-01-02 15:04:05 MST")+" (in ", pageWait) // CET
	b.WaitText(`#jobs tr[data-job="slow"] .rate`, "100%", pageWait)
	b.WaitText(`#jobs tr[data-job="slow"] .last-owner`, "on replica-a", pageWait)

	b.Navigate(e.a + "/jobs/flaky")
	b.WaitCount("#durations svg rect.bar.c-failed", 2, pageWait)
	b.WaitText("#durations .x-label", "last 2 runs", pageWait)
	for sel, want := range map[string]string{"#definition .shell": "echo trying; exit 3", "#definition .timeout": "30s",
		"#definition .retries": "1", "#definition .starting-deadline": "1m0s"} {
		b.WaitText(sel, want, pageWait)
	}
	if n := b.Count("#definition .overlap, #definition .grace, #definition .kind"); n != 0 {
		t.Errorf("the definition shows %d facts at their defaults", n)
	}
	noPageProblems(t, b)
}
