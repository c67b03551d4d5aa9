package job

import (
	"context"
	"testing"
	"time"
)

func TestContextRoundTrip(t *testing.T) {
	t.Parallel()
	want := RunInfo{
		Job:     "reports.daily",
		Tick:    time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC),
		Attempt: 2,
		Owner:   "replica-1",
		Token:   42,
	}
	ctx := NewContext(context.Background(), want)
	got, ok := FromContext(ctx)
	if !ok || got != want {
		t.Fatalf("FromContext = %+v, %v; want %+v, true", got, ok, want)
	}

	// Derived contexts keep it; a nested NewContext shadows it.
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	if got, ok := FromContext(child); !ok || got != want {
		t.Errorf("FromContext(child) = %+v, %v", got, ok)
	}
	inner := want
	inner.Attempt = 3
	if got, _ := FromContext(NewContext(child, inner)); got != inner {
		t.Errorf("FromContext(nested) = %+v, want %+v", got, inner)
	}
}

func TestFromContextWithout(t *testing.T) {
	t.Parallel()
	if got, ok := FromContext(context.Background()); ok || got != (RunInfo{}) {
		t.Errorf("FromContext(Background) = %+v, %v; want zero, false", got, ok)
	}
	// Another package's key with the same underlying type does not collide.
	type contextKey struct{}
	ctx := context.WithValue(context.Background(), contextKey{}, RunInfo{Job: "x"})
	if _, ok := FromContext(ctx); ok {
		t.Error("FromContext found a value stored under a foreign key")
	}
}

func TestContextNil(t *testing.T) {
	t.Parallel()
	var nilCtx context.Context // a variable, so linters do not flag a literal nil
	if _, ok := FromContext(nilCtx); ok {
		t.Error("FromContext(nil) reported a RunInfo")
	}
	ctx := NewContext(nilCtx, RunInfo{Job: "x"})
	if got, ok := FromContext(ctx); !ok || got.Job != "x" {
		t.Errorf("FromContext(NewContext(nil, ...)) = %+v, %v", got, ok)
	}
}
