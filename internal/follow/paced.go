package follow

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/jsapi"
)

// Pace sets how a Paced follow delivers.
type Pace struct {
	// Interval is how often writes are collected while nobody hurries the
	// follow: what was written meanwhile is delivered in one batch.
	Interval time.Duration
	// Linger is how long delivery stays immediate after the last Hurry
	// ended, and the longest a pull waits for new messages.
	Linger time.Duration
	// Idle, when set, reports that nobody needs the writes within Interval
	// (a Locker that holds no lease): the follow then collects them every
	// IdleInterval instead, until Idle reports false again or Wake is
	// called. A follow that nobody needs still pulls, so that its consumer
	// outlives the server's inactivity threshold.
	Idle         func() bool
	IdleInterval time.Duration
}

// between is the pause between two pulls while nobody hurries the follow.
func (p Pace) between() time.Duration {
	if p.Idle != nil && p.IdleInterval > p.Interval && p.Idle() {
		return p.IdleInterval
	}
	return p.Interval
}

// Paced follows the subjects matching a filter like Start, through a pull
// consumer that is asked for messages at a pace its user sets: every
// Interval, or at once while hurried (Hurry) and for Linger after. A consumer that is sent
// each message as it is written costs the server and the client a delivery
// per write, concurrent with the writes themselves (on a 2-core machine
// ~40 µs per lock cycle of two writes, a third more than the writes); a
// pull consumer nobody pulls from costs neither. Messages are never lost:
// the consumer keeps them until they are pulled, and after a reconnect, a
// gap or a lost consumer a new one starts after the last message
// delivered.
type Paced struct {
	stream jetstream.Stream
	nc     *nats.Conn
	filter string
	fn     Handler
	pace   Pace

	ctx    context.Context // cancelled by Stop
	cancel context.CancelFunc
	exited chan struct{}
	hurry  chan struct{} // wakes a paused loop; capacity 1
	wake   chan struct{} // makes a paused loop look at Pace.Idle again; capacity 1

	mu      sync.Mutex
	hurries int       // Hurry calls not yet done
	ended   time.Time // when the last one was done

	// Owned by the loop.
	cons       jetstream.Consumer
	reconnects uint64 // the connection's count when cons was created
	lastSeq    uint64 // stream sequence of the last message delivered
	lastDSeq   uint64 // consumer sequence of the last message delivered
}

const (
	// pacedBatch is the most messages one pull asks for; a full batch is
	// followed by another pull at once.
	pacedBatch = 256
	// pacedRetry is the pause before a new consumer after a failure.
	pacedRetry = 250 * time.Millisecond
	// pacedInactive is after how long without a pull the server deletes
	// the consumer (a frozen or vanished client).
	pacedInactive = 5 * time.Minute
	// noAnswer is how long a pull that asks not to wait may go unanswered
	// before the consumer is taken to be gone: nats.go ends such a pull
	// after 1 s without a word from the server.
	noAnswer = 900 * time.Millisecond
)

// StartPaced is Start with a pace: it returns once fn has seen the messages
// present at the start (or after a short bound), then delivers new ones
// every pace.Interval, or as they come while hurried.
func StartPaced(ctx context.Context, stream jetstream.Stream, nc *nats.Conn, filter string, pace Pace, fn Handler) (*Paced, error) {
	pctx, cancel := context.WithCancel(context.Background())
	p := &Paced{stream: stream, nc: nc, filter: filter, fn: fn, pace: pace,
		ctx: pctx, cancel: cancel, exited: make(chan struct{}), hurry: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
	if err := p.create(ctx); err != nil {
		cancel()
		return nil, err
	}
	caughtUp := make(chan struct{})
	go p.run(caughtUp)
	t := time.NewTimer(catchUpWait)
	defer t.Stop()
	select {
	case <-caughtUp:
	case <-t.C:
	case <-ctx.Done():
	}
	return p, nil
}

// Hurry makes delivery immediate until the returned func is called, and
// for pace.Linger after: messages pending now are delivered at once, later
// ones as they are written. Calls may overlap; each func must be called
// once.
func (p *Paced) Hurry() (done func()) {
	p.mu.Lock()
	p.hurries++
	p.mu.Unlock()
	select {
	case p.hurry <- struct{}{}:
	default:
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.hurries--
			p.ended = time.Now()
			p.mu.Unlock()
		})
	}
}

// Wake tells a follow paced by Pace.Idle that Idle may have turned false:
// its next pull then comes at most Interval after the last one, not
// IdleInterval. It does not block.
func (p *Paced) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Paced) hurrying() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hurries > 0 || (!p.ended.IsZero() && time.Since(p.ended) < p.pace.Linger)
}

// Stop ends the follow and deletes its consumer on the server. It waits a
// few seconds at most, and not at all for the delete while disconnected.
func (p *Paced) Stop() {
	p.cancel()
	<-p.exited
	if p.nc.IsConnected() {
		p.drop(p.cons)
	}
}

// run pulls until Stop; caughtUp is closed after the first pull that left
// nothing pending.
func (p *Paced) run(caughtUp chan struct{}) {
	defer close(p.exited)
	var once sync.Once
	stale := false
	for p.ctx.Err() == nil {
		if stale || p.nc.Stats().Reconnects != p.reconnects {
			// Messages sent while the connection was down, or to a pull
			// that ended without a word from the server, may be lost:
			// start again after the last one delivered.
			if err := p.create(p.ctx); err != nil {
				p.pause(pacedRetry)
				continue
			}
			stale = false
		}
		hurried := p.hurrying()
		n, err := p.pull(hurried)
		switch {
		case errors.Is(err, errCut):
			stale = true
			continue
		case err != nil:
			stale = true
			p.pause(pacedRetry)
			continue
		case n == pacedBatch:
			continue // more is pending
		}
		once.Do(func() { close(caughtUp) })
		if !hurried {
			p.paceWait()
		}
	}
}

// paceWait waits Pace.between from now, looking at it again on Wake, or
// until Hurry or Stop.
func (p *Paced) paceWait() {
	start := time.Now()
	for {
		left := p.pace.between() - time.Since(start)
		if left <= 0 {
			return
		}
		t := time.NewTimer(left)
		select {
		case <-t.C:
			return
		case <-p.wake:
			t.Stop()
		case <-p.hurry:
			t.Stop()
			return
		case <-p.ctx.Done():
			t.Stop()
			return
		}
	}
}

// pause waits d, or until Hurry or Stop.
func (p *Paced) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.hurry:
	case <-p.ctx.Done():
	}
}

// errGap: a consumer sequence was skipped (a message lost in flight).
var errGap = errors.New("follow: gap in the consumer's deliveries")

// errNoAnswer: the server did not answer a pull.
var errNoAnswer = errors.New("follow: no answer to a pull")

// errCut: a hurried pull ended at its client-side bound before the
// server's end of it arrived; a message in flight may be lost.
var errCut = errors.New("follow: pull cut short")

// pull asks for what is pending, waiting for new messages up to
// pace.Linger when hurried, and delivers it. It returns how many messages
// it delivered; an error means the consumer must be created anew.
func (p *Paced) pull(hurried bool) (int, error) {
	sent := time.Now()
	var batch jetstream.MessageBatch
	var err error
	if hurried {
		ctx, cancel := context.WithTimeout(p.ctx, p.pace.Linger)
		defer cancel()
		batch, err = p.cons.Fetch(pacedBatch, jetstream.FetchContext(ctx))
	} else {
		batch, err = p.cons.FetchNoWait(pacedBatch)
	}
	if err != nil {
		return 0, err
	}
	n := 0
	msgs := batch.Messages()
	for {
		var m jetstream.Msg
		select {
		case m = <-msgs:
		case <-p.ctx.Done():
			return n, p.ctx.Err()
		}
		if m == nil {
			break
		}
		md, err := m.Metadata()
		if err != nil {
			continue
		}
		if p.lastDSeq != 0 && md.Sequence.Consumer != p.lastDSeq+1 {
			return n, errGap
		}
		p.lastDSeq, p.lastSeq = md.Sequence.Consumer, md.Sequence.Stream
		p.fn(m.Subject(), md.Sequence.Stream, md.Timestamp, m.Headers())
		n++
	}
	err = batch.Error()
	switch {
	case err == nil, errors.Is(err, jetstream.ErrBatchCompleted), errors.Is(err, jetstream.ErrMaxBytesExceeded):
	case errors.Is(err, context.DeadlineExceeded) && p.ctx.Err() == nil:
		return n, errCut
	default:
		return n, err
	}
	if !hurried && n == 0 && time.Since(sent) >= noAnswer {
		return 0, errNoAnswer
	}
	return n, nil
}

// create makes the pull consumer: from the last message of each subject at
// first, then from just after the last message delivered.
func (p *Paced) create(ctx context.Context) error {
	cfg := jetstream.ConsumerConfig{
		FilterSubject:     p.filter,
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		HeadersOnly:       true,
		InactiveThreshold: pacedInactive,
		MemoryStorage:     true,
		Replicas:          1,
	}
	if p.lastSeq != 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, p.lastSeq+1
	}
	reconnects := p.nc.Stats().Reconnects
	var cons jetstream.Consumer
	err := jsapi.Call(ctx, func(ctx context.Context) (err error) {
		cons, err = p.stream.CreateConsumer(ctx, cfg)
		return err
	})
	if err != nil {
		return err
	}
	if old := p.cons; old != nil {
		p.drop(old)
	}
	p.cons, p.reconnects, p.lastDSeq = cons, reconnects, 0
	return nil
}

// drop deletes a consumer replaced by a new one or no longer needed; when
// that fails, the server drops it after pacedInactive.
func (p *Paced) drop(c jetstream.Consumer) {
	ctx, cancel := context.WithTimeout(context.Background(), catchUpWait)
	defer cancel()
	_ = p.stream.DeleteConsumer(ctx, c.CachedInfo().Name)
}
