package config

import "testing"

// TestDeploymentBuckets: the deployment key names every bucket after it;
// without it the buckets keep their names from before the key; a bucket
// written in the file is used as written.
func TestDeploymentBuckets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src                   string
		lock, history, replicas, js string
	}{
		{"none", "", "locks", "cronlock_history", "cronlock_replicas", "cronlock_jobs"},
		{"empty", "deployment: \"\"\nlock: {bucket: \"\"}\nhistory: {bucket: \"\"}\nreplicas: {bucket: \"\"}\n",
			"locks", "cronlock_history", "cronlock_replicas", "cronlock_jobs"},
		{"named", "deployment: billing\n",
			"cronlock_billing_locks", "cronlock_billing_history", "cronlock_billing_replicas", "cronlock_billing_jobs"},
		{"explicit wins", "deployment: b-2\nlock: {bucket: mylocks}\nreplicas: {bucket: reps}\n",
			"mylocks", "cronlock_b-2_history", "reps", "cronlock_b-2_jobs"},
		{"explicit without deployment", "history: {bucket: h}\nreplicas: {bucket: r}\n",
			"locks", "h", "r", "cronlock_jobs"},
	}
	for _, tt := range tests {
		cfg, err := Parse("d.yaml", []byte(tt.src+job0))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got := [4]string{cfg.Lock.Bucket, cfg.History.Bucket, cfg.Replicas.Bucket, cfg.JobsBucket()}
		if want := [4]string{tt.lock, tt.history, tt.replicas, tt.js}; got != want {
			t.Errorf("%s: buckets (lock, history, replicas, jobs) = %v, want %v", tt.name, got, want)
		}
	}
}

func TestDeploymentErrors(t *testing.T) {
	t.Parallel()
	long := "d1234567890123456789012345678901234567890123456789012345678901234" // 65
	tests := []struct {
		name, src string
		want      []want
	}{
		{"bad name", "deployment: a.b\n", []want{{"1: deployment", `invalid name "a.b": use letters, digits, '_' and '-'`}}},
		{"space", "deployment: \"a b\"\n", []want{{"1: deployment", "invalid name"}}},
		{"not a string", "deployment: 7\n", []want{{"1: deployment", "expected a string, got an integer"}}},
		{"too long", "\ndeployment: " + long + "\n", []want{{"2: deployment", "too long: at most 64 characters, got 65"}}},
		{"replicas bucket", "replicas:\n  bucket: x.y\n", []want{{"2: replicas.bucket", `invalid bucket name "x.y"`}}},
		{"replicas like lock", "lock: {bucket: same}\nreplicas: {bucket: same}\n",
			[]want{{"2: replicas.bucket", `must differ from lock.bucket (both are "same")`}}},
		{"replicas like history", "deployment: x\nreplicas: {bucket: cronlock_x_history}\n",
			[]want{{"2: replicas.bucket", `must differ from history.bucket (both are "cronlock_x_history")`}}},
		{"replicas not a mapping", "replicas: 3\n", []want{{"1: replicas", "expected a mapping, got an integer"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(tt.src+job0))
			checkErrors(t, err, tt.want)
		})
	}
}
