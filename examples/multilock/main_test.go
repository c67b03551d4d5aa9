package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cronlock/cronlock/examples/internal/extest"
)

// run checks its own scenes (no deadlock, all or nothing, busy versus NATS
// failure) and returns an error if one goes wrong; the test also checks
// that the two replicas never held the pair at the same time.
func TestScenes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var out extest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := run(ctx, []string{"-embedded", "-hold", "200ms"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	log := out.String()
	scene1, _, _ := strings.Cut(log, "scene 2")
	first := strings.Index(scene1, "holding both")
	released := strings.Index(scene1, "releasing both") // logged before the release
	second := strings.LastIndex(scene1, "holding both")
	if first < 0 || second == first || released < first || released > second {
		t.Errorf("scene 1: want holding, releasing, holding:\n%s", log)
	}
	for _, want := range []string{"busy", "kept nothing", "lock service unavailable", "done"} {
		if !strings.Contains(log, want) {
			t.Errorf("no %q in the output:\n%s", want, log)
		}
	}
}
