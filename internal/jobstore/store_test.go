package jobstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/jobstore"
	"github.com/cronlock/cronlock/internal/natstest"
)

// A definition's life: put, replace with If-Match, a stale If-Match
// refused, delete by someone, and the revisions saying who did what.
func TestStoreLifecycle(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	_, js := natstest.Connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := jobstore.Open(ctx, js, "cronlock_jobs", 1)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := s.Put(ctx, "acme.report", []byte(`{"name":"acme.report","schedule":"@daily","kind":"report"}`), 0, "alice@host")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "acme.report")
	if err != nil || got.Revision != r1 || got.By != "alice@host" || string(got.Definition) != `{"name":"acme.report","schedule":"@daily","kind":"report"}` {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	r2, err := s.Put(ctx, "acme.report", []byte(`{"name":"acme.report","schedule":"@hourly","kind":"report"}`), r1, "api")
	if err != nil || r2 <= r1 {
		t.Fatalf("Put If-Match %d = %d, %v", r1, r2, err)
	}
	if _, err := s.Put(ctx, "acme.report", []byte(`{}`), r1, "api"); !errors.Is(err, jobstore.ErrRevision) {
		t.Errorf("Put with a stale If-Match = %v, want ErrRevision", err)
	}
	if _, err := s.Delete(ctx, "acme.report", r1, "bob"); !errors.Is(err, jobstore.ErrRevision) {
		t.Errorf("Delete with a stale If-Match = %v, want ErrRevision", err)
	}
	if _, err := s.Delete(ctx, "acme.report", r2, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "acme.report"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("Get after delete = %v, want ErrNotFound", err)
	}
	if _, err := s.Delete(ctx, "acme.report", 0, "bob"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("Delete twice = %v, want ErrNotFound", err)
	}
	revs, err := s.Revisions(ctx, "acme.report")
	if err != nil || len(revs) != 3 {
		t.Fatalf("Revisions = %+v, %v", revs, err)
	}
	if revs[0].By != "alice@host" || revs[1].By != "api" || revs[2].Operation != "delete" || revs[2].By != "bob" {
		t.Errorf("revisions = %+v", revs)
	}
	if names, err := s.Names(ctx); err != nil || len(names) != 0 {
		t.Errorf("Names after delete = %v, %v", names, err)
	}
}
