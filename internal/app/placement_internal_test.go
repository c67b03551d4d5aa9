package app

import (
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// A reload that changes replica.labels is logged as taking effect only
// after a restart, as the other replica-level sections are; the same
// labels in another order change nothing.
func TestReloadOfReplicaLabelsTakesARestart(t *testing.T) {
	t.Parallel()
	a := &config.Config{Replica: config.Replica{Labels: map[string]string{"zone": "eu-1", "role": "batch"}}}
	same := &config.Config{Replica: config.Replica{Labels: map[string]string{"role": "batch", "zone": "eu-1"}}}
	b := &config.Config{Replica: config.Replica{Labels: map[string]string{"zone": "eu-2", "role": "batch"}}}
	if got := restartSections(a, same); len(got) != 0 {
		t.Errorf("the same labels: restart sections %v, want none", got)
	}
	if got := restartSections(a, b); !slices.Equal(got, []string{"replica"}) {
		t.Errorf("labels changed: restart sections %v, want [replica]", got)
	}
	opts := SchedulerOptions(b, zerolog.Nop(), nil)
	if opts.ReplicaLabels["zone"] != "eu-2" {
		t.Errorf("scheduler options' labels %v, want the configuration's", opts.ReplicaLabels)
	}
}
