package lock

import (
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/rs/zerolog"
)

// Defaults, as in the reference design.
const (
	DefaultBucket                = "locks"
	DefaultLeaseDuration         = 20 * time.Second
	DefaultAcquireRetryBaseDelay = 50 * time.Millisecond
	DefaultAcquireRetryMaxDelay  = 500 * time.Millisecond
	// MaxLeaseDuration bounds LeaseDuration: a crashed holder's lock is
	// free after at most an hour.
	MaxLeaseDuration = time.Hour
)

// Options configure a Locker. The zero value of every field selects its
// default; contradictions are errors from New.
type Options struct {
	// Bucket is the JetStream Key-Value bucket holding the locks. Default
	// "locks". It is created when missing.
	Bucket string
	// LeaseDuration is how long the server keeps a key without renewal: the
	// time after which a crashed holder's lock is free. A whole number of
	// seconds, at least 1 s (the server counts TTLs in seconds). Default 20 s.
	LeaseDuration time.Duration
	// RenewInterval is how often a held lease is renewed. It must leave room
	// for a renewal before the local safe deadline (LeaseDuration minus
	// SafetyMargin). Default: half the lease (10 s for the default lease).
	RenewInterval time.Duration
	// AcquireRetryBaseDelay and AcquireRetryMaxDelay bound the full-jitter
	// exponential backoff between acquire attempts. Defaults 50 ms and 500 ms.
	AcquireRetryBaseDelay time.Duration
	AcquireRetryMaxDelay  time.Duration
	// OwnerID labels the holder in the key's value. Default "<hostname>:<pid>".
	// It is a label only: two callers with the same owner id still exclude
	// each other.
	OwnerID string
	// Replicas is the bucket's replication factor when New creates it
	// (1, or 3 for a 3-node cluster). Default 1.
	Replicas int
	// Logger receives debug events (acquired, released, waiting for a held
	// key) and warnings (lease lost). The zero value logs nothing.
	Logger zerolog.Logger
}

var bucketRe = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// withDefaults returns o with defaults filled in, or an error naming the
// first invalid field.
func (o Options) withDefaults() (Options, error) {
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if !bucketRe.MatchString(o.Bucket) {
		return o, fmt.Errorf("lock: Options.Bucket %q: only A-Z a-z 0-9 _ - are allowed", o.Bucket)
	}
	switch {
	case o.LeaseDuration == 0:
		o.LeaseDuration = DefaultLeaseDuration
	case o.LeaseDuration < time.Second:
		return o, fmt.Errorf("lock: Options.LeaseDuration %v: must be at least 1s", o.LeaseDuration)
	case o.LeaseDuration > MaxLeaseDuration:
		return o, fmt.Errorf("lock: Options.LeaseDuration %v: must be at most %v", o.LeaseDuration, MaxLeaseDuration)
	case o.LeaseDuration%time.Second != 0:
		return o, fmt.Errorf("lock: Options.LeaseDuration %v: must be a whole number of seconds (the server truncates key TTLs to seconds)", o.LeaseDuration)
	}
	if o.RenewInterval < 0 {
		return o, fmt.Errorf("lock: Options.RenewInterval %v: must not be negative", o.RenewInterval)
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = o.LeaseDuration / 2
	}
	if o.RenewInterval >= o.LeaseDuration {
		return o, fmt.Errorf("lock: Options.RenewInterval %v: must be shorter than LeaseDuration %v", o.RenewInterval, o.LeaseDuration)
	}
	if safe := o.LeaseDuration - safetyMargin(o.LeaseDuration); o.RenewInterval >= safe {
		return o, fmt.Errorf("lock: Options.RenewInterval %v: must be shorter than LeaseDuration minus its safety margin (%v), or the lease is lost before it is renewed", o.RenewInterval, safe)
	}
	if o.AcquireRetryBaseDelay < 0 {
		return o, fmt.Errorf("lock: Options.AcquireRetryBaseDelay %v: must not be negative", o.AcquireRetryBaseDelay)
	}
	if o.AcquireRetryMaxDelay < 0 {
		return o, fmt.Errorf("lock: Options.AcquireRetryMaxDelay %v: must not be negative", o.AcquireRetryMaxDelay)
	}
	if o.AcquireRetryBaseDelay == 0 {
		o.AcquireRetryBaseDelay = DefaultAcquireRetryBaseDelay
	}
	if o.AcquireRetryMaxDelay == 0 {
		o.AcquireRetryMaxDelay = max(DefaultAcquireRetryMaxDelay, o.AcquireRetryBaseDelay)
	}
	if o.AcquireRetryBaseDelay > o.AcquireRetryMaxDelay {
		return o, fmt.Errorf("lock: Options.AcquireRetryBaseDelay %v: must not exceed AcquireRetryMaxDelay %v", o.AcquireRetryBaseDelay, o.AcquireRetryMaxDelay)
	}
	if o.OwnerID == "" {
		o.OwnerID = DefaultOwnerID()
	}
	switch {
	case o.Replicas == 0:
		o.Replicas = 1
	case o.Replicas < 0 || o.Replicas > 5:
		return o, fmt.Errorf("lock: Options.Replicas %d: must be between 1 and 5", o.Replicas)
	}
	return o, nil
}

// DefaultOwnerID is "<hostname>:<pid>".
func DefaultOwnerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// safetyMargin is subtracted from the lease to get the local safe deadline:
// it covers the drift between this host's monotonic clock and the server's
// and gives a holder time to stop its work before the server frees the key.
// A tenth of the lease: 2 s for the default 20 s lease, 100 ms for 1 s.
func safetyMargin(lease time.Duration) time.Duration { return lease / 10 }

// AcquireOption adjusts one Acquire or AcquireAll call.
type AcquireOption func(*acquireOptions)

type acquireOptions struct {
	timeout time.Duration
	owner   string
}

// WithTimeout bounds how long Acquire waits for a held key. The default is
// 1.5 × AcquireRetryMaxDelay (750 ms with the defaults). Values ≤ 0 keep the
// default.
func WithTimeout(d time.Duration) AcquireOption {
	return func(o *acquireOptions) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithOwner overrides Options.OwnerID for one acquisition.
func WithOwner(id string) AcquireOption {
	return func(o *acquireOptions) {
		if id != "" {
			o.owner = id
		}
	}
}
