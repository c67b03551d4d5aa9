package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/cronlock/cronlock/internal/kv"
)

// Store reads and writes the records of a history bucket: one key per job
// holding its Record, and each run's output under a key of its own. Every
// write of a record is a compare-and-swap on the revision it was read at,
// so replicas that update one record at once never lose each other's
// changes. What a change means (a claim, a hold, a result) is the
// caller's: the Store keeps the bytes, the headers and the revisions.
type Store struct {
	bucket *kv.Bucket
	size   int
	// cache, if not nil, keeps the records this replica wrote or read
	// last, so that the next update of one starts from it (see Cache).
	cache *Cache
}

// MaxCASRetries bounds read-modify-write loops on one key. Only replicas
// finishing, catching up or recording runs of the same job contend, so a
// few rounds always suffice; more means something is wrong.
const MaxCASRetries = 8

// NewStore is the Store of bucket, keeping size runs per record, with
// cache (nil: every update reads its record first).
func NewStore(bucket *kv.Bucket, size int, cache *Cache) *Store {
	return &Store{bucket: bucket, size: size, cache: cache}
}

// Bucket is the store's bucket.
func (s *Store) Bucket() *kv.Bucket { return s.bucket }

// Size is the number of runs a record keeps.
func (s *Store) Size() int { return s.size }

// Untouched reports whether the cache knows nothing of the key: this
// replica neither read nor wrote it, nor did a watch deliver one of its
// writes.
func (s *Store) Untouched(key string) bool { return s.cache.untouched(key) }

// Seen notes a write of key at rev delivered by a watch of the bucket: a
// cached record older than it is stale.
func (s *Store) Seen(key string, rev uint64) { s.cache.seen(key, rev) }

// ErrSettled: a read gave up before decoding the job's record, because
// its headers show that the change it was read for would refuse it
// (GetPeek).
var ErrSettled = errors.New("settled by the record's headers")

// CorruptError is a job's record in the history bucket that is not a
// Record: not JSON, or JSON of another shape.
type CorruptError struct {
	Job      string
	Revision uint64 // the record's revision in the bucket
	Err      error  // why it does not decode

	value  []byte
	header nats.Header
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("the record of job %q (revision %d) is not a job state (corrupt): %v", e.Job, e.Revision, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Value is the record's bytes, as read.
func (e *CorruptError) Value() []byte { return e.value }

// Header is the record's headers, as read.
func (e *CorruptError) Header() nats.Header { return e.header }

// Get returns the job's record and its revision: the zero Record and
// revision 0 when there is none; a Record and the revision of its delete
// when it was deleted. A record that does not decode is a *CorruptError.
func (s *Store) Get(ctx context.Context, name string) (Record, uint64, error) {
	return s.GetPeek(ctx, name, nil)
}

// GetPeek is Get, which first asks settled, if not nil, whether the
// record's headers settle the read's purpose: then it decodes nothing and
// fails with ErrSettled. Decoding a record of 20 runs is most of the CPU
// of a replica that reads a record only to find its tick claimed.
func (s *Store) GetPeek(ctx context.Context, name string, settled func(nats.Header) bool) (Record, uint64, error) {
	e, err := s.bucket.Last(ctx, name)
	if err != nil || e == nil {
		return Record{}, 0, err
	}
	if e.Free {
		return Record{}, e.Revision, nil
	}
	if settled != nil && settled(e.Header) {
		return Record{}, e.Revision, ErrSettled
	}
	var st Record
	if err := json.Unmarshal(e.Value, &st); err != nil {
		return Record{}, 0, &CorruptError{Job: name, Revision: e.Revision, Err: err, value: e.Value, header: e.Header}
	}
	return st, e.Revision, nil
}

// Put writes st, keeping its last Size runs, if the key is still at rev (0:
// the key must not exist), and returns the new revision, or 0 on a lost
// compare-and-swap.
func (s *Store) Put(ctx context.Context, name string, st *Record, rev uint64) (uint64, error) {
	if over := len(st.Runs) - s.size; over > 0 {
		st.Runs = st.Runs[over:]
	}
	buf := encodeBuffers.Get().(*[]byte)
	defer encodeBuffers.Put(buf)
	data, err := st.AppendJSON((*buf)[:0]) // outputs live under their own keys
	if err != nil {
		return 0, err
	}
	*buf = data
	newRev, err := s.bucket.Put(ctx, kv.Write{Key: name, Value: data, Header: Header(st), Expected: rev})
	if kv.IsConflict(err) {
		return 0, nil
	}
	return newRev, err
}

// encodeBuffers are the buffers records are encoded into to be written: a
// record of 20 runs is about 5 KB, allocated and collected at every write
// before. A buffer is reused once its write is answered: the NATS client
// has copied it into its own by then (a synchronous publish).
var encodeBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, encodeBufferSize)
	return &b
}}

const encodeBufferSize = 8 << 10

// ReadFunc reads the record an Update starts from, when it has no guess:
// Get, or a read that repairs what it reads first.
type ReadFunc func(ctx context.Context) (Record, uint64, error)

// Update applies change to the job's record with compare-and-swap,
// retrying on conflicts, and returns the record written and its revision.
// change is given the record and the revision it changes, and returns
// false to leave the record as it is (then the revision is 0). A record
// written shares its runs with the cache, which saves copying them on
// every write: callers read it, or pass it as a later guess (which is
// copied before change), but never change its runs in place.
//
// A caller that knows the current record and revision passes them as a
// first guess to save a read; without one the cache's is taken. A guess
// may be stale, so only a record read from the key can decide that
// nothing changes: change returning false on a guess costs a read and a
// retry. read (nil: Get) reads the key.
func (s *Store) Update(ctx context.Context, name string, guess *Record, rev uint64, read ReadFunc, change func(*Record, uint64) bool) (Record, uint64, error) {
	if read == nil {
		read = func(ctx context.Context) (Record, uint64, error) { return s.Get(ctx, name) }
	}
	private := false // the guess's runs are a copy of our own (the cache's)
	if guess == nil {
		if st, r, ok := s.cache.Get(name); ok {
			guess, rev, private = &st, r, true
		}
	}
	for range MaxCASRetries {
		st, guessed := Record{}, guess != nil
		if guessed {
			st, guess = *guess, nil
			if !private {
				st.Runs = CloneRuns(st.Runs) // change edits runs in place
			}
		} else {
			var err error
			if st, rev, err = read(ctx); err != nil {
				return Record{}, 0, err
			}
			s.cache.put(name, st, rev)
		}
		if !change(&st, rev) {
			if guessed {
				continue
			}
			return st, 0, nil
		}
		newRev, err := s.Put(ctx, name, &st, rev)
		if err != nil || newRev == 0 {
			s.cache.drop(name)
		}
		if err != nil {
			return Record{}, 0, err
		}
		if newRev != 0 {
			s.cache.keep(name, st, newRev) // not a copy: see the contract above
			return st, newRev, nil
		}
	}
	return Record{}, 0, fmt.Errorf("history of %q: too many concurrent updates", name)
}

// OutputKey is where a run's output lives. '/' cannot occur in a job
// name, so these keys never meet a job's record; the ID modulo Size+1
// keeps at most Size+1 outputs per job, more than the runs kept.
func (s *Store) OutputKey(run Run) string {
	return fmt.Sprintf("%s/output/%d", run.Job, run.ID%uint64(s.size+1))
}

// Output returns the output tail kept for run, or "" when none is kept
// (no output, or a newer run took its place).
func (s *Store) Output(ctx context.Context, run Run) (string, error) {
	e, err := s.bucket.Last(ctx, s.OutputKey(run))
	if err != nil || e == nil || e.Free || e.Header.Get(RunIDHeader) != strconv.FormatUint(run.ID, 10) {
		return "", err
	}
	return string(e.Value), nil
}

// PutOutput stores a run's output under its own key.
func (s *Store) PutOutput(ctx context.Context, run Run) error {
	e, err := s.bucket.Last(ctx, s.OutputKey(run))
	if err != nil {
		return err
	}
	var rev uint64
	if e != nil {
		rev = e.Revision
	}
	_, err = s.bucket.Put(ctx, kv.Write{Key: s.OutputKey(run), Value: []byte(run.Output), Expected: rev,
		Header: nats.Header{RunIDHeader: []string{strconv.FormatUint(run.ID, 10)}}})
	return err
}
