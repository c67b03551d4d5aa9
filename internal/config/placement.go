package config

import (
	"maps"
	"slices"

	"github.com/cronlock/cronlock/job"
)

// Replica is the replica's own description (the top-level replica key),
// announced with it. A change takes a restart, as the other replica-level
// settings do (reload.go's restart sections).
type Replica struct {
	// Labels are the replica's labels, such as {zone: eu-1, role: batch}:
	// a job's on_replicas runs only on the replicas whose labels have all
	// its pairs. Keys and values: 1 to 63 of A-Z, a-z, 0-9, '_', '-', '.';
	// at most 32 labels. Nil when absent.
	Labels map[string]string `yaml:"labels"`
}

// validatePlacement checks the job's run_on and on_replicas keys.
func (d *decoder) validatePlacement(j *Job, at func(string) string) {
	_, err := job.ParseRunOn(j.RunOn)
	d.check(err != nil, at("run_on"), nil, "%v", err)
	d.check(j.OnReplicas != nil && len(j.OnReplicas) == 0, at("on_replicas"), nil,
		"must not be empty: leave the key out to run the job on any replica")
	d.checkLabels(at("on_replicas"), j.OnReplicas)
}

// checkLabels checks a set of labels at path, each label at its own line.
func (d *decoder) checkLabels(path string, labels map[string]string) {
	d.check(len(labels) > job.MaxLabels, path, nil, "%d labels: at most %d", len(labels), job.MaxLabels)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		err := job.ValidateLabel(k, labels[k])
		d.check(err != nil, join(path, k), nil, "%v", err)
	}
}
