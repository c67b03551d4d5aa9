package lock_test

// Benchmarks of the lease lock against a real embedded nats-server on
// loopback. See BENCHMARKS.md at the repository root for the figures, the
// machine and the command that produced them.
//
// Latency-distribution benchmarks (Handover, Failover, Contention8) run a
// fixed batch of samples per b.N iteration and report percentiles with
// b.ReportMetric; their ns/op is overridden with the mean sample (handover
// latency, delay beyond the lease, time per acquisition). Round trips per
// operation ("rt/op") are counted in a separate, untimed phase by a spy
// connection subscribed to the bucket's subjects and to the message-get API
// subjects: every KV publish and every read the clients send is one request
// the spy sees once (pull requests of the watches are not counted).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/cronlock/cronlock/internal/natstest"
	"github.com/cronlock/cronlock/lock"
)

const (
	benchBucket = "bench"
	// benchMarkerTTL mirrors the Locker's release/expiry marker TTL.
	benchMarkerTTL = time.Hour
	// benchRTOps is how many operations the untimed round-trip count runs.
	benchRTOps = 50
)

// benchServer starts a single-node JetStream server and returns its URL.
func benchServer(b *testing.B) string {
	b.Helper()
	return natstest.RunServer(b, natstest.Options{}).ClientURL()
}

// benchOptions are short-lease options for the benchmarks.
func benchOptions(owner string) lock.Options {
	return lock.Options{
		Bucket:        benchBucket,
		LeaseDuration: 2 * time.Second,
		RenewInterval: time.Second,
		OwnerID:       owner,
	}
}

// benchLocker opens a connection of its own and a Locker on it; both are
// closed by b.Cleanup.
func benchLocker(b *testing.B, url string, o lock.Options) (*lock.Locker, *nats.Conn) {
	b.Helper()
	nc, js := natstest.Connect(b, url)
	l, err := lock.New(context.Background(), js, o)
	if err != nil {
		b.Fatalf("lock.New: %v", err)
	}
	b.Cleanup(func() { l.Close() })
	return l, nc
}

// benchRecord is a value the size and shape of the Locker's lock record, for
// the raw benchmarks.
func benchRecord() []byte {
	now := time.Now().UTC()
	v, _ := json.Marshal(struct {
		Owner      string    `json:"owner"`
		Lease      string    `json:"lease"`
		AcquiredAt time.Time `json:"acquired_at"`
		ExpiresAt  time.Time `json:"expires_at"`
	}{"bench-raw", nuid.Next(), now, now.Add(2 * time.Second)})
	return v
}

// benchCreateBucket creates the bucket as lock.New does: history 1, per-key
// TTLs with limit markers.
func benchCreateBucket(b *testing.B, js jetstream.JetStream) jetstream.KeyValue {
	b.Helper()
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{
		Bucket:         benchBucket,
		History:        1,
		Storage:        jetstream.FileStorage,
		LimitMarkerTTL: benchMarkerTTL,
	})
	if err != nil {
		b.Fatalf("create bucket: %v", err)
	}
	return kv
}

// rtSpy counts the requests clients send for the bucket: KV publishes
// (writes, markers) and message gets (STREAM.MSG.GET, DIRECT.GET).
type rtSpy struct{ nc *nats.Conn }

func newRTSpy(b *testing.B, url string) *rtSpy {
	b.Helper()
	nc, _ := natstest.Connect(b, url)
	for _, subj := range []string{
		"$KV." + benchBucket + ".>",
		"$JS.API.STREAM.MSG.GET.>",
		"$JS.API.DIRECT.GET.>",
	} {
		if _, err := nc.Subscribe(subj, func(*nats.Msg) {}); err != nil {
			b.Fatalf("spy subscribe %s: %v", subj, err)
		}
	}
	if err := nc.Flush(); err != nil {
		b.Fatalf("spy flush: %v", err)
	}
	return &rtSpy{nc: nc}
}

// count returns the number of requests seen so far. A request is routed to
// the spy before the server answers it, so after a completed operation the
// spy's flush (PING/PONG) guarantees the count includes it.
func (s *rtSpy) count() uint64 {
	if err := s.nc.Flush(); err != nil {
		return 0
	}
	return s.nc.Stats().InMsgs
}

// perOp runs op n times and returns the requests per op.
func (s *rtSpy) perOp(n int, op func()) float64 {
	before := s.count()
	for range n {
		op()
	}
	return float64(s.count()-before) / float64(n)
}

// quantile returns the nearest-rank q-quantile of sorted samples.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// reportDist reports p50, p99 and max of samples in milliseconds and sets
// ns/op to their mean.
func reportDist(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	b.ReportMetric(ms(quantile(samples, 0.50)), "p50-ms")
	b.ReportMetric(ms(quantile(samples, 0.99)), "p99-ms")
	b.ReportMetric(ms(samples[len(samples)-1]), "max-ms")
	b.ReportMetric(float64(len(samples)), "samples")
	b.ReportMetric(float64(mean(samples).Nanoseconds()), "ns/op")
}

// BenchmarkAcquireRelease measures uncontended Acquire+Release cycles on one
// key: after the first cycle, each Acquire follows the Locker's own release
// and should cost one compare-and-swap publish, the Release one more.
func BenchmarkAcquireRelease(b *testing.B) {
	url := benchServer(b)
	l, _ := benchLocker(b, url, benchOptions("bench-ar"))
	ctx := context.Background()
	const key = "ar"
	cycle := func() (acq, rel time.Duration) {
		t0 := time.Now()
		lease, err := l.Acquire(ctx, key)
		if err != nil {
			b.Fatalf("acquire: %v", err)
		}
		t1 := time.Now()
		if err := lease.Release(ctx); err != nil {
			b.Fatalf("release: %v", err)
		}
		return t1.Sub(t0), time.Since(t1)
	}
	cycle() // warm up: the key gets its first release marker
	var acqSum, relSum time.Duration
	b.ResetTimer()
	for range b.N {
		a, r := cycle()
		acqSum += a
		relSum += r
	}
	b.StopTimer()
	b.ReportMetric(us(acqSum/time.Duration(b.N)), "acquire-µs")
	b.ReportMetric(us(relSum/time.Duration(b.N)), "release-µs")
	spy := newRTSpy(b, url)
	b.ReportMetric(spy.perOp(benchRTOps, func() { cycle() }), "rt/op")
}

// BenchmarkRawKV measures the two writes an acquire+release cycle needs, done
// directly with nats.go on a bucket created as lock.New creates it: a
// compare-and-swap publish with a TTL, then a compare-and-swap purge marker
// (as Locker.free writes it: KV-Operation PURGE, subject rollup, marker TTL).
// "plain" has no other consumer on the bucket; "watched" also runs a
// headers-only ordered consumer on the same connection, as every Locker does.
func BenchmarkRawKV(b *testing.B) {
	for _, watched := range []bool{false, true} {
		name := "plain"
		if watched {
			name = "watched"
		}
		b.Run(name, func(b *testing.B) { benchRawKV(b, watched) })
	}
}

func benchRawKV(b *testing.B, watched bool) {
	url := benchServer(b)
	cycle := newRawCycle(b, url, benchBucket, watched)
	cycle()
	b.ResetTimer()
	for range b.N {
		cycle()
	}
	b.StopTimer()
	spy := newRTSpy(b, url)
	b.ReportMetric(spy.perOp(benchRTOps, cycle), "rt/op")
}

// BenchmarkAcquireReleaseVsRaw runs, interleaved on one server, one
// Acquire+Release cycle and the raw pair of writes on a plain bucket and on a
// watched bucket per op, and reports the per-cycle times and the ratios. The
// interleaving makes the ratio robust to a noisy machine, where separate
// benchmarks run seconds apart can drift by tens of percent.
func BenchmarkAcquireReleaseVsRaw(b *testing.B) {
	url := benchServer(b)
	ctx := context.Background()
	l, _ := benchLocker(b, url, benchOptions("bench-pair"))
	lockCycle := func() {
		lease, err := l.Acquire(ctx, "pair")
		if err != nil {
			b.Fatalf("acquire: %v", err)
		}
		if err := lease.Release(ctx); err != nil {
			b.Fatalf("release: %v", err)
		}
	}
	plain := newRawCycle(b, url, "rawplain", false)
	watched := newRawCycle(b, url, "rawwatched", true)
	cycles := []func(){lockCycle, plain, watched}
	for _, c := range cycles {
		c()
	}
	var sums [3]time.Duration
	b.ResetTimer()
	for i := range b.N {
		for j := range cycles {
			k := (i + j) % len(cycles) // rotate the order
			t0 := time.Now()
			cycles[k]()
			sums[k] += time.Since(t0)
		}
	}
	b.StopTimer()
	b.ReportMetric(us(sums[0]/time.Duration(b.N)), "lock-µs")
	b.ReportMetric(us(sums[1]/time.Duration(b.N)), "raw-µs")
	b.ReportMetric(us(sums[2]/time.Duration(b.N)), "raw-watched-µs")
	b.ReportMetric(float64(sums[0])/float64(sums[1]), "lock/raw")
	b.ReportMetric(float64(sums[0])/float64(sums[2]), "lock/raw-watched")
}

// newRawCycle creates bucket as lock.New would, optionally with a
// headers-only watch on the same connection, and returns one raw cycle: the
// CAS write with TTL and the CAS purge marker.
func newRawCycle(b *testing.B, url, bucket string, watched bool) func() {
	b.Helper()
	ctx := context.Background()
	_, js := natstest.Connect(b, url)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: bucket, History: 1, Storage: jetstream.FileStorage, LimitMarkerTTL: benchMarkerTTL,
	}); err != nil {
		b.Fatalf("create bucket: %v", err)
	}
	if watched {
		stream, err := js.Stream(ctx, "KV_"+bucket)
		if err != nil {
			b.Fatal(err)
		}
		cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{"$KV." + bucket + ".>"},
			DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
			HeadersOnly:    true,
		})
		if err != nil {
			b.Fatal(err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) { _, _ = m.Metadata() })
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(cc.Stop)
	}
	subject := "$KV." + bucket + ".raw"
	value := benchRecord()
	var rev uint64
	return func() {
		ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: value, Header: nats.Header{}},
			jetstream.WithExpectLastSequencePerSubject(rev),
			jetstream.WithMsgTTL(2*time.Second))
		if err != nil {
			b.Fatalf("CAS publish: %v", err)
		}
		m := nats.NewMsg(subject)
		m.Header.Set("KV-Operation", "PURGE")
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		ack, err = js.PublishMsg(ctx, m,
			jetstream.WithExpectLastSequencePerSubject(ack.Sequence),
			jetstream.WithMsgTTL(benchMarkerTTL))
		if err != nil {
			b.Fatalf("CAS purge marker: %v", err)
		}
		rev = ack.Sequence
	}
}

// BenchmarkKVCreateAfterDelete measures nats.go's kv.Create on a key whose
// last entry is a delete marker: Create, then Delete, repeated. Create tries
// revision 0, fails, reads the key, and writes again: three round trips.
// Compare create-µs with acquire-µs of BenchmarkAcquireRelease.
func BenchmarkKVCreateAfterDelete(b *testing.B) {
	url := benchServer(b)
	_, js := natstest.Connect(b, url)
	kv := benchCreateBucket(b, js)
	ctx := context.Background()
	const key = "create"
	value := benchRecord()
	create := func() time.Duration {
		t0 := time.Now()
		if _, err := kv.Create(ctx, key, value); err != nil {
			b.Fatalf("create: %v", err)
		}
		return time.Since(t0)
	}
	del := func() time.Duration {
		t0 := time.Now()
		if err := kv.Delete(ctx, key); err != nil {
			b.Fatalf("delete: %v", err)
		}
		return time.Since(t0)
	}
	create()
	del()
	var cSum, dSum time.Duration
	b.ResetTimer()
	for range b.N {
		cSum += create()
		dSum += del()
	}
	b.StopTimer()
	b.ReportMetric(us(cSum/time.Duration(b.N)), "create-µs")
	b.ReportMetric(us(dSum/time.Duration(b.N)), "delete-µs")
	spy := newRTSpy(b, url)
	var createRT float64
	for range benchRTOps {
		before := spy.count()
		create()
		createRT += float64(spy.count() - before)
		del()
	}
	b.ReportMetric(createRT/benchRTOps, "create-rt/op")
	b.ReportMetric(spy.perOp(benchRTOps, func() { create(); del() }), "rt/op")
}

// BenchmarkColdAcquire measures acquires whose Locker may not yet know the
// key's last entry, for context:
//   - after-foreign-release: two Lockers on separate connections take turns;
//     each acquires right after the other's Release returned, usually before
//     its own watch has delivered the release marker.
//   - new-locker: lock.New then an immediate Acquire on a key whose last
//     entry is a release marker (the watch's initial delivery races the
//     acquire); new-µs is lock.New, acquire-µs the Acquire. Each iteration
//     also releases and closes the Locker.
func BenchmarkColdAcquire(b *testing.B) {
	b.Run("after-foreign-release", func(b *testing.B) {
		url := benchServer(b)
		la, _ := benchLocker(b, url, benchOptions("bench-a"))
		lb, _ := benchLocker(b, url, benchOptions("bench-b"))
		ctx := context.Background()
		const key = "pingpong"
		lockers := [2]*lock.Locker{la, lb}
		cur, err := la.Acquire(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		turn := 1
		step := func() time.Duration {
			if err := cur.Release(ctx); err != nil {
				b.Fatalf("release: %v", err)
			}
			t0 := time.Now()
			next, err := lockers[turn].Acquire(ctx, key)
			if err != nil {
				b.Fatalf("acquire: %v", err)
			}
			d := time.Since(t0)
			cur, turn = next, 1-turn
			return d
		}
		var acqSum time.Duration
		b.ResetTimer()
		for range b.N {
			acqSum += step()
		}
		b.StopTimer()
		b.ReportMetric(us(acqSum/time.Duration(b.N)), "acquire-µs")
		spy := newRTSpy(b, url)
		var acqRT float64
		for range benchRTOps {
			if err := cur.Release(ctx); err != nil {
				b.Fatal(err)
			}
			before := spy.count()
			next, err := lockers[turn].Acquire(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			acqRT += float64(spy.count() - before)
			cur, turn = next, 1-turn
		}
		b.ReportMetric(acqRT/benchRTOps, "acquire-rt/op")
		cur.Release(ctx)
	})
	b.Run("new-locker", func(b *testing.B) {
		url := benchServer(b)
		_, js := natstest.Connect(b, url)
		ctx := context.Background()
		const key = "fresh"
		var spy *rtSpy
		var acqRT float64
		var stream jetstream.Stream
		cycle := func() (newD, acqD time.Duration) {
			// Snapshot before New: New's requests (stream info, consumer
			// create) are on subjects the spy does not count.
			var before uint64
			if spy != nil {
				before = spy.count()
			}
			t0 := time.Now()
			l, err := lock.New(ctx, js, benchOptions("bench-new"))
			if err != nil {
				b.Fatalf("lock.New: %v", err)
			}
			t1 := time.Now()
			lease, err := l.Acquire(ctx, key)
			if err != nil {
				b.Fatalf("acquire: %v", err)
			}
			t2 := time.Now()
			if spy != nil {
				acqRT += float64(spy.count() - before)
			}
			if err := lease.Release(ctx); err != nil {
				b.Fatalf("release: %v", err)
			}
			l.Close()
			if stream == nil {
				return t1.Sub(t0), t2.Sub(t1)
			}
			// Locker.Close stops its watch but leaves the ephemeral consumer
			// on the server (until its 5 min inactivity threshold); delete
			// it so that they do not pile up over b.N iterations.
			names := stream.ConsumerNames(ctx)
			for name := range names.Name() {
				if err := stream.DeleteConsumer(ctx, name); err != nil {
					b.Fatalf("delete leftover consumer: %v", err)
				}
			}
			return t1.Sub(t0), t2.Sub(t1)
		}
		cycle() // creates the bucket and the key's first release marker
		var err error
		if stream, err = js.Stream(ctx, "KV_"+benchBucket); err != nil {
			b.Fatal(err)
		}
		var newSum, acqSum time.Duration
		b.ResetTimer()
		for range b.N {
			n, a := cycle()
			newSum += n
			acqSum += a
		}
		b.StopTimer()
		b.ReportMetric(us(newSum/time.Duration(b.N)), "new-µs")
		b.ReportMetric(us(acqSum/time.Duration(b.N)), "acquire-µs")
		spy = newRTSpy(b, url)
		for range benchRTOps {
			cycle()
		}
		b.ReportMetric(acqRT/benchRTOps, "acquire-rt/op")
	})
}

// handoverSamples is the number of handovers per b.N iteration.
const handoverSamples = 200

// BenchmarkHandover measures how fast a blocked waiter gets a released key:
// from just before the holder's Release until the waiter's Acquire returns.
// The waiter's retry backoff is 5 s, so only its bucket watch can wake it in
// time. Holder and waiter have their own connections.
func BenchmarkHandover(b *testing.B) {
	url := benchServer(b)
	holder, _ := benchLocker(b, url, benchOptions("bench-holder"))
	wo := benchOptions("bench-waiter")
	wo.AcquireRetryBaseDelay = 5 * time.Second
	wo.AcquireRetryMaxDelay = 5 * time.Second
	waiter, _ := benchLocker(b, url, wo)
	ctx := context.Background()
	const key = "handover"

	type result struct {
		lease *lock.Lease
		at    time.Time
		err   error
	}
	sample := func() time.Duration {
		held, err := holder.Acquire(ctx, key, lock.WithTimeout(10*time.Second))
		if err != nil {
			b.Fatalf("holder acquire: %v", err)
		}
		got := make(chan result, 1)
		go func() {
			lease, err := waiter.Acquire(ctx, key, lock.WithTimeout(30*time.Second))
			got <- result{lease, time.Now(), err}
		}()
		// Let the waiter make its first attempt, find the key held and block.
		time.Sleep(5 * time.Millisecond)
		select {
		case r := <-got:
			b.Fatalf("waiter returned while the key was held: %v", r.err)
		default:
		}
		t0 := time.Now()
		if err := held.Release(ctx); err != nil {
			b.Fatalf("holder release: %v", err)
		}
		r := <-got
		if r.err != nil {
			b.Fatalf("waiter acquire: %v", r.err)
		}
		d := r.at.Sub(t0)
		if err := r.lease.Release(ctx); err != nil {
			b.Fatalf("waiter release: %v", err)
		}
		return d
	}
	sample() // warm up
	var samples []time.Duration
	b.ResetTimer()
	for range b.N {
		for range handoverSamples {
			samples = append(samples, sample())
		}
	}
	b.StopTimer()
	reportDist(b, samples)
}

const (
	// failoverSamples is the number of crashes per b.N iteration. They run
	// concurrently, started a stagger apart.
	failoverSamples = 20
	failoverLease   = time.Second
)

// BenchmarkFailover measures how long after the server-side expiry of a
// crashed holder's lease a waiter gets the key. The holder acquires on its
// own connection, which is then closed without Release (no renewal was sent:
// the acquire is the last write). Expiry is taken as the time just before
// the holder's Acquire call plus the 1 s lease, so the figure slightly
// overstates the delay (by the time from that instant to the publish). The
// waiter, on another connection, has a 5 s retry backoff: only the server's
// expiry marker, seen by its watch, wakes it in time.
//
// nats-server expires per-message TTLs with one timer per stream, and after
// a pass that expired something its next pass is at least 250 ms later
// (filestore resetAgeChk), so a key due within ~500 ms of another expiry in
// the same bucket is expired late, by up to ~250 ms. Hence two variants:
//   - isolated: each sample in a bucket of its own (its own stream and
//     timer), as for a single crashed holder: this is the lock's figure;
//   - shared-bucket: all samples on distinct keys of one bucket, 100 ms
//     apart, which shows the server's expiry batching.
func BenchmarkFailover(b *testing.B) {
	b.Run("isolated", func(b *testing.B) { benchFailover(b, true, 50*time.Millisecond) })
	b.Run("shared-bucket", func(b *testing.B) { benchFailover(b, false, 100*time.Millisecond) })
}

func benchFailover(b *testing.B, isolated bool, stagger time.Duration) {
	url := benchServer(b)
	_, wjs := natstest.Connect(b, url) // the waiters' connection
	ctx := context.Background()
	wo := benchOptions("bench-waiter")
	wo.LeaseDuration = failoverLease
	wo.RenewInterval = failoverLease / 2
	wo.AcquireRetryBaseDelay = 5 * time.Second
	wo.AcquireRetryMaxDelay = 5 * time.Second
	newWaiter := func(bucket string) *lock.Locker {
		o := wo
		o.Bucket = bucket
		l, err := lock.New(ctx, wjs, o)
		if err != nil {
			b.Fatalf("waiter lock.New: %v", err)
		}
		b.Cleanup(func() { l.Close() })
		return l
	}
	shared := newWaiter(benchBucket)

	var samples []time.Duration
	var mu sync.Mutex
	for iter := range b.N {
		b.StopTimer()
		waiters := make([]*lock.Locker, failoverSamples)
		for i := range waiters {
			waiters[i] = shared
			if isolated {
				waiters[i] = newWaiter(fmt.Sprintf("failover-%d-%d", iter, i))
			}
		}
		b.StartTimer()
		var wg sync.WaitGroup
		errs := make(chan error, failoverSamples)
		for i, waiter := range waiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i) * stagger)
				ho := waiter.Options()
				ho.OwnerID = "bench-crasher"
				d, err := failoverSample(ctx, url, ho, waiter, fmt.Sprintf("failover-%d-%d", iter, i))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				samples = append(samples, d)
				mu.Unlock()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportDist(b, samples)
}

// failoverSample crashes one holder of key and returns how long after the
// lease's server-side expiry the waiter acquired the key.
func failoverSample(ctx context.Context, url string, ho lock.Options, waiter *lock.Locker, key string) (time.Duration, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	holder, err := lock.New(ctx, js, ho)
	if err != nil {
		return 0, fmt.Errorf("holder lock.New: %w", err)
	}
	defer holder.Close()
	sent := time.Now()
	if _, err := holder.Acquire(ctx, key); err != nil {
		return 0, fmt.Errorf("holder acquire: %w", err)
	}
	expiry := sent.Add(ho.LeaseDuration)
	nc.Close() // crash: no Release; the renewal goroutine fails and gives up
	lease, err := waiter.Acquire(ctx, key, lock.WithTimeout(10*time.Second))
	at := time.Now()
	if err != nil {
		return 0, fmt.Errorf("waiter acquire: %w", err)
	}
	if err := lease.Release(ctx); err != nil {
		return 0, fmt.Errorf("waiter release: %w", err)
	}
	if at.Before(expiry) {
		return 0, fmt.Errorf("waiter acquired %v before the crashed holder's lease expired", expiry.Sub(at))
	}
	return at.Sub(expiry), nil
}

const (
	contendClients = 8
	contendCycles  = 50
	contendHold    = time.Millisecond
)

// BenchmarkContention8 runs 8 clients, each with its own connection and
// Locker, taking one key 50 times each and holding it 1 ms. It reports
// acquisitions per second, acquire waits, how often the client that just
// released the key took it again ("same-client-%"), and fails if two clients
// are ever inside the critical section together. rt/acq (requests per
// acquisition, release included) comes from one extra, untimed batch.
func BenchmarkContention8(b *testing.B) {
	url := benchServer(b)
	lockers := make([]*lock.Locker, contendClients)
	for i := range lockers {
		lockers[i], _ = benchLocker(b, url, benchOptions(fmt.Sprintf("bench-c%d", i)))
	}
	var overlaps atomic.Int64
	var waits []time.Duration
	var elapsed time.Duration
	repeats := 0
	b.ResetTimer()
	for range b.N {
		r, err := contendBatch(lockers, &overlaps)
		if err != nil {
			b.Fatal(err)
		}
		if n := overlaps.Load(); n > 0 {
			b.Fatalf("%d acquisitions overlapped another holder's critical section", n)
		}
		elapsed += r.elapsed
		waits = append(waits, r.waits...)
		repeats += r.repeats
	}
	b.StopTimer()
	acquisitions := b.N * contendClients * contendCycles
	b.ReportMetric(float64(acquisitions)/elapsed.Seconds(), "acq/s")
	b.ReportMetric(float64(overlaps.Load()), "overlaps")
	b.ReportMetric(100*float64(repeats)/float64(acquisitions-b.N), "same-client-%")
	slices.Sort(waits)
	b.ReportMetric(ms(quantile(waits, 0.50)), "wait-p50-ms")
	b.ReportMetric(ms(quantile(waits, 0.99)), "wait-p99-ms")
	b.ReportMetric(ms(waits[len(waits)-1]), "wait-max-ms")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(acquisitions), "ns/op")

	spy := newRTSpy(b, url)
	before := spy.count()
	if _, err := contendBatch(lockers, &overlaps); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(spy.count()-before)/(contendClients*contendCycles), "rt/acq")
	if n := overlaps.Load(); n > 0 {
		b.Fatalf("%d acquisitions overlapped another holder's critical section", n)
	}
}

type contendResult struct {
	elapsed time.Duration
	waits   []time.Duration
	repeats int // acquisitions by the client that made the previous one
}

// contendBatch runs one batch of contendCycles acquisitions per Locker.
func contendBatch(lockers []*lock.Locker, overlaps *atomic.Int64) (contendResult, error) {
	ctx := context.Background()
	const key = "contended"
	var inside atomic.Int64
	var mu sync.Mutex
	var res contendResult
	last := -1
	var wg sync.WaitGroup
	errs := make(chan error, len(lockers))
	start := time.Now()
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range contendCycles {
				t0 := time.Now()
				lease, err := l.Acquire(ctx, key, lock.WithTimeout(60*time.Second))
				if err != nil {
					errs <- err
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				w := time.Since(t0)
				mu.Lock()
				res.waits = append(res.waits, w)
				if i == last {
					res.repeats++
				}
				last = i
				mu.Unlock()
				time.Sleep(contendHold)
				inside.Add(-1)
				if err := lease.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	close(errs)
	return res, <-errs
}
