package app_test

import (
	"context"
	"fmt"
	"github.com/cronlock/cronlock/internal/testlog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/natstest"
)

// TestWarnsOfABucketWithFewerReplicas: on a 3-node cluster, a history
// bucket created R1 before lock.replicas was raised to 3 is logged at warn
// at start with the command that raises it; the buckets the daemon creates
// itself are R3 and not logged.
func TestWarnsOfABucketWithFewerReplicas(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t, 3)
	_, js := natstest.Connect(t, c.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "cronlock_history", Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(`
nats: {url: %q}
lock: {lease: 2s, renew: 500ms, replicas: 3}
http: {listen: ""}
jobs: [{name: j, schedule: "@yearly", shell: "true"}]
`, c.URL()))
	logs := &testlog.Buffer{}
	d, _ := startDaemon(t, cfg, logs)
	waitFor(t, 30*time.Second, "the scheduler running", d.Ready)

	var warns []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"level":"warn"`) && strings.Contains(l, "fewer than lock.replicas") {
			warns = append(warns, l)
		}
	}
	if len(warns) != 1 {
		t.Fatalf("got %d warnings of buckets with fewer replicas, want 1 (cronlock_history):\n%s", len(warns), logs)
	}
	for _, want := range []string{`"bucket":"cronlock_history"`, `"replicas":1`, `"lock_replicas":3`,
		`"fix":"nats stream edit KV_cronlock_history --replicas 3 --force"`} {
		if !strings.Contains(warns[0], want) {
			t.Errorf("warning lacks %s:\n%s", want, warns[0])
		}
	}
	for _, b := range []string{"locks", "cronlock_replicas"} {
		s, err := js.Stream(ctx, "KV_"+b)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Errorf("bucket %s created with %d replicas, want 3", b, r)
		}
	}
}
