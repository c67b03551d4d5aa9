package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/examples/internal/extest"
)

// run checks its own scenes (the group one at a time, two thumbnails at
// once, a cancel recorded as such, a backfill of the skipped ticks) and
// returns an error if one goes wrong.
func TestScenes(t *testing.T) {
	var out extest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := run(ctx, []string{"-embedded"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"scene 1", "scene 2", "reindex cancelled", "backfill done"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the output:\n%s", want, out.String())
		}
	}
}
