package app

import (
	"testing"

	"github.com/cronlock/cronlock/internal/config"
)

// TestSameJobIgnoresNotifyTargets: a reload that only edits a job's notify
// list (or moves it to other lines) must not reschedule the job; the
// notifier's targets are replaced separately.
func TestSameJobIgnoresNotifyTargets(t *testing.T) {
	t.Parallel()
	a := config.Job{Name: "a", Schedule: "@every 1m", Shell: "x", Line: 3,
		Notify: []config.NotifyTarget{{Command: []string{"cat"}, Line: 9}}}
	b := a
	b.Line = 5
	b.Notify = []config.NotifyTarget{{Webhook: "https://example.com/x", Line: 12}}
	if !sameJob(a, b) {
		t.Errorf("jobs differing only in notify targets are not the same")
	}
	b.Shell = "y"
	if sameJob(a, b) {
		t.Errorf("jobs with different shells are the same")
	}
}
