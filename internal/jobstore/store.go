// Package jobstore keeps the definitions of runtime jobs in a JetStream KV
// bucket that every replica follows: one key per job, named after it,
// whose value records the definition (a JSON object with the keys of a
// file job) with who put it and when. A delete is a delete marker that
// records who deleted it, so a key's revisions say who changed what. The
// store does not validate definitions (internal/config does) nor schedule
// them (internal/app does).
package jobstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cronlock/cronlock/internal/kv"
)

// Errors callers match.
var (
	// ErrNotFound: no definition of that name (never put, or deleted).
	ErrNotFound = errors.New("no runtime job of that name")
	// ErrRevision: the stored revision is not the one the change required.
	ErrRevision = errors.New("the stored revision differs from the one required")
)

// History is how many revisions of each definition the bucket keeps.
const History = 10

// Record is the stored value of a definition.
type Record struct {
	Definition json.RawMessage `json:"definition"`
	By         string          `json:"by"`
	At         time.Time       `json:"at"`
}

// deletion is the body of a delete marker.
type deletion struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// Stored is one definition as the bucket holds it.
type Stored struct {
	Name     string
	Revision uint64
	Record
}

// Revision is one revision of a key: a put (Definition set) or a delete.
type Revision struct {
	Revision   uint64          `json:"revision"`
	Operation  string          `json:"operation"` // "put" or "delete"
	By         string          `json:"by"`
	At         time.Time       `json:"at"`
	Definition json.RawMessage `json:"definition,omitempty"`
}

// Store is the bucket of definitions. It is safe for concurrent use.
type Store struct {
	b   *kv.Bucket
	now func() time.Time
}

// Open opens (creating it when missing) the bucket named bucket, with
// replicas copies when it creates it.
func Open(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (*Store, error) {
	b, err := kv.Open(ctx, js, kv.Config{Name: bucket, Description: "cronlock runtime job definitions",
		Replicas: replicas, History: History})
	if err != nil {
		return nil, err
	}
	return &Store{b: b, now: time.Now}, nil
}

// Bucket is the store's bucket, for following it.
func (s *Store) Bucket() *kv.Bucket { return s.b }

// Put stores definition (a JSON object) as the job name's, by by. With
// ifMatch > 0 it requires the stored revision to be ifMatch (ErrRevision
// otherwise); with 0 it replaces whatever is stored. It returns the new
// revision.
func (s *Store) Put(ctx context.Context, name string, definition []byte, ifMatch uint64, by string) (uint64, error) {
	value, err := json.Marshal(Record{Definition: definition, By: by, At: s.now().UTC()})
	if err != nil {
		return 0, err
	}
	for {
		expected := ifMatch
		if expected == 0 {
			e, err := s.b.Last(ctx, name)
			if err != nil {
				return 0, err
			}
			if e != nil {
				expected = e.Revision
			}
		} else if err := s.requireLive(ctx, name, ifMatch); err != nil {
			return 0, err
		}
		rev, err := s.b.Put(ctx, kv.Write{Key: name, Value: value, Expected: expected})
		switch {
		case err == nil:
			return rev, nil
		case kv.IsConflict(err) && ifMatch == 0:
			continue // changed between the read and the write: last writer wins
		case kv.IsConflict(err):
			return 0, fmt.Errorf("%w (want revision %d)", ErrRevision, ifMatch)
		default:
			return 0, err
		}
	}
}

// requireLive checks that the key's last revision is rev and not deleted.
func (s *Store) requireLive(ctx context.Context, name string, rev uint64) error {
	e, err := s.b.Last(ctx, name)
	switch {
	case err != nil:
		return err
	case e == nil || e.Free:
		return fmt.Errorf("%w (want revision %d): %w", ErrRevision, rev, ErrNotFound)
	case e.Revision != rev:
		return fmt.Errorf("%w: stored %d, want %d", ErrRevision, e.Revision, rev)
	}
	return nil
}

// Delete removes the job name's definition, by by, keeping its earlier
// revisions. With ifMatch > 0 it requires the stored revision to be
// ifMatch. It returns the delete's revision; ErrNotFound when there is no
// definition.
func (s *Store) Delete(ctx context.Context, name string, ifMatch uint64, by string) (uint64, error) {
	e, err := s.b.Last(ctx, name)
	switch {
	case err != nil:
		return 0, err
	case e == nil || e.Free:
		return 0, ErrNotFound
	case ifMatch > 0 && e.Revision != ifMatch:
		return 0, fmt.Errorf("%w: stored %d, want %d", ErrRevision, e.Revision, ifMatch)
	}
	body, err := json.Marshal(deletion{By: by, At: s.now().UTC()})
	if err != nil {
		return 0, err
	}
	h := nats.Header{}
	h.Set(kv.OperationHeader, kv.OperationDelete)
	rev, err := s.b.Put(ctx, kv.Write{Key: name, Value: body, Header: h, Expected: e.Revision})
	if kv.IsConflict(err) {
		return 0, fmt.Errorf("%w: it changed while deleting", ErrRevision)
	}
	return rev, err
}

// Get returns the job name's definition, or ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (Stored, error) {
	e, err := s.b.Last(ctx, name)
	switch {
	case err != nil:
		return Stored{}, err
	case e == nil || e.Free:
		return Stored{}, ErrNotFound
	}
	return Decode(name, e.Revision, e.Value)
}

// Decode reads a stored value of the job name at revision rev.
func Decode(name string, rev uint64, value []byte) (Stored, error) {
	st := Stored{Name: name, Revision: rev}
	if err := json.Unmarshal(value, &st.Record); err != nil {
		return Stored{}, fmt.Errorf("runtime job %q revision %d: not a definition record: %w", name, rev, err)
	}
	if len(st.Definition) == 0 {
		return Stored{}, fmt.Errorf("runtime job %q revision %d: the record has no definition", name, rev)
	}
	return st, nil
}

// Names lists the names of the stored definitions, sorted.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	names, err := s.b.Keys(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// Revisions lists the job name's kept revisions, oldest first;
// ErrNotFound when the key has none.
func (s *Store) Revisions(ctx context.Context, name string) ([]Revision, error) {
	entries, err := s.b.KeyValue().History(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := make([]Revision, 0, len(entries))
	for _, e := range entries {
		r := Revision{Revision: e.Revision(), Operation: "put", At: e.Created().UTC()}
		if e.Operation() != jetstream.KeyValuePut {
			var d deletion
			_ = json.Unmarshal(e.Value(), &d) // a marker without a body says only when
			r.Operation, r.By = "delete", d.By
			if !d.At.IsZero() {
				r.At = d.At
			}
		} else if st, err := Decode(name, e.Revision(), e.Value()); err == nil {
			r.By, r.At, r.Definition = st.By, st.At, st.Definition
		}
		out = append(out, r)
	}
	return out, nil
}

// getInFlight is how many reads GetMany has in flight: one round trip at a
// time would take most of a minute for 100,000 definitions.
const getInFlight = 32

// GetMany reads the definitions of names, getInFlight at a time, and
// returns each one's result in the order of names.
func (s *Store) GetMany(ctx context.Context, names []string) ([]Stored, []error) {
	got := make([]Stored, len(names))
	errs := make([]error, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(getInFlight, len(names)) {
		wg.Go(func() {
			for i := range next {
				got[i], errs[i] = s.Get(ctx, names[i])
			}
		})
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	return got, errs
}
