package app

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// A publish or subscription outside the permissions of the connection's
// NATS user is refused by the server asynchronously: nats.go hands the
// server's -ERR to the connection's error handler and leaves the request
// that needed it waiting for a reply that cannot come, until its timeout
// (30 s for an operator command). This file turns the refusal into a fast
// failure, naming the permission, of the operations that watch for it, and
// into a rate-limited log line.

// PermissionError is a publish or subscription that the NATS server refused
// the connection's user. It matches nats.ErrPermissionViolation.
type PermissionError struct {
	// Op is "Publish" or "Subscription"; Subject is the subject refused.
	Op, Subject string
	// Violation is the server's words, e.g.
	// `Permissions Violation for Publish to "$JS.API.INFO"`.
	Violation string
	err       error
}

func (e *PermissionError) Error() string {
	return "the NATS user lacks a permission: " + e.Violation + " (" + e.hint() + ")"
}

func (e *PermissionError) Unwrap() error { return e.err }

// hint says what to do about the refusal. $JS.API.INFO and stream creation
// are only needed to create a bucket that does not exist.
func (e *PermissionError) hint() string {
	if e.Subject == "$JS.API.INFO" || strings.HasPrefix(e.Subject, "$JS.API.STREAM.CREATE.") {
		return "a bucket is missing and this user may not create it: create the buckets with an administrator's " +
			"credentials, or grant the subjects that PERMISSIONS.md lists for creating them"
	}
	return "PERMISSIONS.md lists the subjects cronlock needs"
}

var violationRe = regexp.MustCompile(`Permissions Violation for (Publish|Subscription) to "([^"]+)".*`)

// asPermissionError is err as a *PermissionError if it is a permissions
// violation that names its subject.
func asPermissionError(err error) (*PermissionError, bool) {
	if err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
		return nil, false
	}
	m := violationRe.FindStringSubmatch(err.Error())
	if m == nil {
		return nil, false
	}
	return &PermissionError{Op: m[1], Subject: m[2], Violation: m[0], err: err}, true
}

// refusalKey is the context key of FailOnRefusal's cancel function.
type refusalKey struct{}

// FailOnRefusal returns a context for an operator command. The connection
// that Dial (or DialRunning) makes with it, or with a context derived from
// it, cancels it, with a *PermissionError as its cause, as soon as the NATS
// server refuses that connection a publish or a subscription: the operation
// waiting for a reply that cannot come fails at once, and Refused returns
// the error naming the permission. Such a refusal is then the caller's to
// report: the connection does not log it. cancel releases the context.
func FailOnRefusal(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	return context.WithValue(ctx, refusalKey{}, cancel), func() { cancel(nil) }
}

// Refused returns the *PermissionError that cancelled ctx (see
// FailOnRefusal), or nil.
func Refused(ctx context.Context) error {
	var pe *PermissionError
	if errors.As(context.Cause(ctx), &pe) {
		return pe
	}
	return nil
}

// refusals are the contexts that a connection cancels when it is refused a
// permission.
type refusals struct {
	mu      sync.Mutex
	next    int
	watches map[int]refusalWatch
}

type refusalWatch struct {
	cancel context.CancelCauseFunc
	// reports: the watcher reports the refusal itself (an operator
	// command's error), so the connection need not log it.
	reports bool
}

// add registers cancel; the returned function unregisters it.
func (r *refusals) add(w refusalWatch) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watches == nil {
		r.watches = make(map[int]refusalWatch)
	}
	id := r.next
	r.next++
	r.watches[id] = w
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.watches, id)
	}
}

// refuse cancels every watching context with pe as its cause and reports
// whether one of the watchers reports it.
func (r *refusals) refuse(pe *PermissionError) (reported bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.watches {
		w.cancel(pe)
		reported = reported || w.reports
	}
	return reported
}

// hookRefusals makes c's error handler cancel the contexts watching for
// refusals (failOnRefusal, cancelOnRefusal) before it logs the error as
// clientOptions' handler does, unless a watcher reports it.
func (c *Conn) hookRefusals() {
	logErr := c.NC.ErrorHandler()
	c.NC.SetErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
		if pe, ok := asPermissionError(err); ok && c.refusals.refuse(pe) {
			return
		}
		if logErr != nil {
			logErr(nc, sub, err)
		}
	})
}

// failOnRefusal returns ctx, cancelled with a *PermissionError as its cause
// when c is refused a permission, and a function that releases it.
func (c *Conn) failOnRefusal(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	remove := c.refusals.add(refusalWatch{cancel: cancel})
	return ctx, func() { remove(); cancel(nil) }
}

// cancelOnRefusal has c cancel the context of FailOnRefusal that ctx
// carries, if any, when c is refused a permission, for as long as c lives.
func (c *Conn) cancelOnRefusal(ctx context.Context) {
	if cancel, ok := ctx.Value(refusalKey{}).(context.CancelCauseFunc); ok {
		c.refusals.add(refusalWatch{cancel: cancel, reports: true})
	}
}

// refusalLogEvery is the least time between two log lines about the same
// refused permission: a replica retrying what needs it says so once a
// minute, not at every attempt.
const refusalLogEvery = time.Minute

// asyncErrorLogger is the connection's handler of asynchronous errors: it
// logs a refused permission as such, naming it and its subject, at most
// once per refusalLogEvery per permission, and any other error at once.
func asyncErrorLogger(log zerolog.Logger) nats.ErrHandler {
	limit := &perKeyLimit{every: refusalLogEvery}
	return func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if pe, ok := asPermissionError(err); ok {
			if n, ok := limit.allow(pe.Violation, time.Now()); ok {
				log.Error().Err(pe).Str("subject", pe.Subject).Int("refusals", n).
					Msg("NATS refused a permission; what needed it failed and is retried")
			}
			return
		}
		ev := log.Error().Err(err)
		if sub != nil {
			ev = ev.Str("subject", sub.Subject)
		}
		ev.Msg("NATS error")
	}
}

// perKeyLimitKeys bounds the keys perKeyLimit remembers: beyond it, those
// whose period is over are forgotten.
const perKeyLimitKeys = 1024

// perKeyLimit allows one event per key per period.
type perKeyLimit struct {
	every time.Duration
	mu    sync.Mutex
	keys  map[string]*keyCount
}

type keyCount struct {
	last  time.Time // of the last allowed event
	count int       // events since then, allowed or not
}

// allow reports whether the event of key at now is to be reported, and
// how many events of key (this one included) it stands for.
func (l *perKeyLimit) allow(key string, now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = make(map[string]*keyCount)
	}
	k := l.keys[key]
	if k == nil {
		if len(l.keys) >= perKeyLimitKeys {
			for key, k := range l.keys {
				if now.Sub(k.last) >= l.every {
					delete(l.keys, key)
				}
			}
		}
		k = &keyCount{}
		l.keys[key] = k
	}
	k.count++
	if !k.last.IsZero() && now.Sub(k.last) < l.every {
		return 0, false
	}
	n := k.count
	k.last, k.count = now, 0
	return n, true
}
