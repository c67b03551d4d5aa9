package notify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/scheduler"
)

// events returns the event of every payload a hookServer received.
func events(t *testing.T, s *hookServer) []string {
	t.Helper()
	var out []string
	for _, r := range s.requests() {
		var p Payload
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Job+":"+p.Event)
	}
	return out
}

func TestTargetsFollowOnLists(t *testing.T) {
	t.Parallel()
	dflt, all, succ := newHookServer(t), newHookServer(t), newHookServer(t)
	f := newFixture(t, Options{Workers: 1},
		config.NotifyTarget{Webhook: config.Secret(dflt.URL)}, // On nil: the default
		config.NotifyTarget{Webhook: config.Secret(all.URL), On: []string{EventSuccess, EventRecovered, EventMissed, EventFailure}},
		config.NotifyTarget{Webhook: config.Secret(succ.URL), On: []string{EventSuccess}})
	for _, r := range []struct{ status, previous scheduler.RunStatus }{
		{scheduler.StatusSucceeded, ""},                        // success
		{scheduler.StatusTimeout, scheduler.StatusSucceeded},   // failure
		{scheduler.StatusCancelled, scheduler.StatusTimeout},   // nothing
		{scheduler.StatusMissed, scheduler.StatusCancelled},    // missed
		{scheduler.StatusSucceeded, scheduler.StatusMissed},    // recovered (+ success)
		{scheduler.StatusRunning, scheduler.StatusSucceeded},   // nothing
		{scheduler.StatusSucceeded, scheduler.StatusSucceeded}, // success
	} {
		f.Notify(testRun(r.status), r.previous)
	}
	f.close(t)
	for _, tt := range []struct {
		s    *hookServer
		want string
	}{
		{dflt, "backup:failure backup:missed backup:recovered"},
		{all, "backup:success backup:failure backup:missed backup:recovered backup:success"},
		{succ, "backup:success backup:success backup:success"},
	} {
		if got := strings.Join(events(t, tt.s), " "); got != tt.want {
			t.Errorf("received %q, want %q", got, tt.want)
		}
	}
	f.wantCounters(t, 11, 0)
}

// TestSetTargetsPerJob uses the targets config resolves for each job: the
// top-level list, a job's own list, and notify: [] (none).
func TestSetTargetsPerJob(t *testing.T) {
	t.Parallel()
	top, own := newHookServer(t), newHookServer(t)
	src := "notify:\n  - webhook: " + top.URL + "\njobs:\n" +
		"  - {name: backup, schedule: \"@every 1m\", shell: x}\n" +
		"  - {name: report, schedule: \"@every 1m\", shell: x, notify: [{webhook: \"" + own.URL + "\"}]}\n" +
		"  - {name: quiet, schedule: \"@every 1m\", shell: x, notify: []}\n"
	cfg, err := config.Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Options{Workers: 1})
	if err := f.SetTargets(cfg.NotifyTargets()); err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"backup", "report", "quiet", "unknown"} {
		r := testRun(scheduler.StatusFailed)
		r.Job = job
		f.Notify(r, "")
	}
	// A reload that removes the top-level list: backup goes quiet.
	cfg.Notify = nil
	if err := f.SetTargets(cfg.NotifyTargets()); err != nil {
		t.Fatal(err)
	}
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	if got := strings.Join(events(t, top), " "); got != "backup:failure" {
		t.Errorf("top-level target received %q", got)
	}
	if got := strings.Join(events(t, own), " "); got != "report:failure" {
		t.Errorf("job's own target received %q", got)
	}
}

func TestSetTargetsRejectsInvalidTargets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, config.NotifyTarget{Command: []string{"true"}})
	for _, bad := range []config.NotifyTarget{
		{Webhook: "ftp://example.com/x"},
		{Webhook: "http:///x"},
		{},
		{Command: []string{""}},
		{Webhook: "http://x", Command: []string{"true"}},
	} {
		if err := f.SetTargets(map[string][]config.NotifyTarget{"backup": {bad}}); err == nil {
			t.Errorf("SetTargets(%+v) succeeded", bad)
		}
	}
	// The previous targets stay in effect.
	f.Notify(testRun(scheduler.StatusFailed), "")
	f.close(t)
	f.wantCounters(t, 1, 0)
}

func TestNewFailsWhenMetricsAreRegisteredTwice(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	n, err := New(Options{Registerer: reg, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close(t.Context()) }()
	if _, err := New(Options{Registerer: reg, Logger: zerolog.Nop()}); err == nil {
		t.Errorf("second New with the same registry succeeded")
	}
}
