package chaos

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// HistoryBucket is cronlock's default history bucket (stream HistoryStream).
const HistoryBucket = "cronlock_history"

// probeTimeout bounds each probe request, so that a sample takes at most
// about that long whatever the cluster does.
const probeTimeout = 250 * time.Millisecond

// prober asks the lock and history streams, directly (through no proxy),
// whether they answer the requests cronlock makes: the stream's info (its
// leader answers) and a KV get of a key that does not exist (a direct get,
// answered by any current replica). A stream can have a leader in /jsz
// seconds before it answers these — after a restart of every node, a
// leader is elected before it has caught up and subscribed — so the
// catch-up figure is given from both instants.
type prober struct {
	nc *nats.Conn
	js jetstream.JetStream

	mu  sync.Mutex
	kvs map[string]jetstream.KeyValue // bucket → handle, once opened
}

func newProber(url string) (*prober, error) {
	nc, err := nats.Connect(url, nats.Name("chaos-prober"), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(10*time.Millisecond, 10*time.Millisecond))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &prober{nc: nc, js: js, kvs: map[string]jetstream.KeyValue{}}, nil
}

// answers reports, for each bucket, whether its stream answered both
// probes within probeTimeout. The buckets are probed concurrently.
func (p *prober) answers(buckets ...string) []bool {
	out := make([]bool, len(buckets))
	var wg sync.WaitGroup
	for i, b := range buckets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = p.answer(b)
		}()
	}
	wg.Wait()
	return out
}

func (p *prober) answer(bucket string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if _, err := p.js.Stream(ctx, "KV_"+bucket); err != nil {
		return false
	}
	p.mu.Lock()
	kv := p.kvs[bucket]
	p.mu.Unlock()
	if kv == nil {
		var err error
		if kv, err = p.js.KeyValue(ctx, bucket); err != nil {
			return false
		}
		p.mu.Lock()
		p.kvs[bucket] = kv
		p.mu.Unlock()
	}
	_, err := kv.Get(ctx, "chaos-probe")
	return err == nil || errors.Is(err, jetstream.ErrKeyNotFound)
}

func (p *prober) close() { p.nc.Close() }
