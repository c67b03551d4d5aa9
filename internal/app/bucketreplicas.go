package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/internal/jsapi"
	"github.com/cronlock/cronlock/internal/kv"
)

// replicasCheckTimeout bounds the start-up check of the buckets'
// replication: it only logs, so it must not hold start-up up.
const replicasCheckTimeout = jsapi.Attempt

// buckets are the KV buckets the daemon creates with lock.replicas.
func buckets(cfg *config.Config) []string {
	return []string{cfg.Lock.Bucket, cfg.History.Bucket, cfg.Replicas.Bucket}
}

// warnReplicas logs at warn, once at start, every bucket that keeps fewer
// copies than lock.replicas asks for, with the command that raises it
// (JetStream copies the data to the new replicas itself); and a cluster of
// three or more nodes whose lock.replicas keeps the buckets on one node.
// An existing bucket is never changed by cronlock, so without this a raised
// lock.replicas would go unnoticed until its one node is lost.
func warnReplicas(ctx context.Context, js jetstream.JetStream, cfg *config.Config, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, replicasCheckTimeout)
	defer cancel()
	want := cfg.Lock.Replicas
	if n := cfg.NATS.Embedded.Cluster.Nodes(); cfg.NATS.URL == "" && n >= config.ClusterReplicas && want < config.ClusterReplicas {
		log.Warn().Int("lock_replicas", want).Int("nodes", n).
			Msg("lock.replicas keeps the buckets on fewer nodes than the cluster has: losing one of them stops every job; " +
				"remove lock.replicas (default 3 with a cluster) or set it to 3")
	}
	for _, b := range buckets(cfg) {
		err := kv.CheckReplicas(ctx, js, b, want)
		var fewer *kv.FewerReplicasError
		switch {
		case errors.As(err, &fewer):
			log.Warn().Str("bucket", b).Int("replicas", fewer.Have).Int("lock_replicas", want).
				Str("fix", replicasFix(cfg, b, want)).
				Msgf("bucket %s has %d replica(s), fewer than lock.replicas %d: it was created before; raise it with the command in fix",
					b, fewer.Have, want)
		case err != nil:
			log.Debug().Err(err).Str("bucket", b).Msg("cannot check the bucket's replicas")
		}
	}
}

// replicasFix is the nats CLI command that gives bucket want replicas,
// pointed at the embedded server's client port when there is one.
func replicasFix(cfg *config.Config, bucket string, want int) string {
	cmd := fmt.Sprintf("nats stream edit KV_%s --replicas %d --force", bucket, want)
	if cfg.NATS.URL == "" && cfg.NATS.Embedded.Listen != "" {
		cmd += " --server nats://" + connectAddr(cfg.NATS.Embedded.Listen)
	}
	return cmd
}
