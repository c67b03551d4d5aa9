package job_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cronlock/cronlock/job"
)

func TestRunOnAndOnReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want job.RunOn
		bad  bool
	}{{"", job.RunOnOne, false}, {"one", job.RunOnOne, false}, {"every_replica", job.RunOnEveryReplica, false}, {"all", 0, true}} {
		got, err := job.ParseRunOn(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseRunOn(%q) = %v, %v", tc.in, got, err)
		}
		if err == nil && tc.in != "" && got.String() != tc.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.in)
		}
	}
	run := func(context.Context) error { return nil }
	ok := job.Job{Name: "a", Schedule: "@every 1m", Run: run, RunOn: job.RunOnEveryReplica, OnReplicas: map[string]string{"zone": "eu-1.a"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	bad := job.Job{Name: "a", Schedule: "@every 1m", Run: run, RunOn: 7, OnReplicas: map[string]string{"role": "a=b"}}
	err := bad.Validate()
	for _, want := range []string{`job "a": runOn: unknown setting RunOn(7)`, `job "a": onReplicas: label value "a=b"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
	for _, tc := range []struct {
		labels, on map[string]string
		want       bool
	}{
		{nil, nil, true},
		{map[string]string{"role": "batch", "zone": "eu-1"}, map[string]string{"role": "batch"}, true},
		{map[string]string{"role": "web"}, map[string]string{"role": "batch"}, false},
		{nil, map[string]string{"role": "batch"}, false},
		{map[string]string{"role": "batch"}, map[string]string{"role": "batch", "zone": "eu-1"}, false},
	} {
		if got := job.Matches(tc.labels, tc.on); got != tc.want {
			t.Errorf("Matches(%v, %v) = %v, want %v", tc.labels, tc.on, got, tc.want)
		}
	}
}
