package app

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestAsPermissionError reads the subject out of the errors nats.go passes
// to the error handler, and only out of permission violations.
func TestAsPermissionError(t *testing.T) {
	for _, tc := range []struct {
		err       error
		op, subj  string
		violation string
	}{
		{fmt.Errorf("%w: %s", nats.ErrPermissionViolation, `Permissions Violation for Publish to "$JS.API.INFO"`),
			"Publish", "$JS.API.INFO", `Permissions Violation for Publish to "$JS.API.INFO"`},
		{fmt.Errorf("%w: %s", nats.ErrPermissionViolation, `Permissions Violation for Subscription to "_INBOX.x.*" using queue "q"`),
			"Subscription", "_INBOX.x.*", `Permissions Violation for Subscription to "_INBOX.x.*" using queue "q"`},
		{fmt.Errorf("%w: %s", nats.ErrPermissionViolation, "something else"), "", "", ""},
		{errors.New(`Permissions Violation for Publish to "a"`), "", "", ""}, // not from nats.go
		{nats.ErrMaxSubscriptionsExceeded, "", "", ""},
		{nil, "", "", ""},
	} {
		pe, ok := asPermissionError(tc.err)
		if ok != (tc.op != "") {
			t.Errorf("asPermissionError(%v) ok = %v", tc.err, ok)
			continue
		}
		if !ok {
			continue
		}
		if pe.Op != tc.op || pe.Subject != tc.subj || pe.Violation != tc.violation || !errors.Is(pe, nats.ErrPermissionViolation) {
			t.Errorf("asPermissionError(%v) = %+v", tc.err, pe)
		}
	}
}

// TestPerKeyLimit: one event per key per period, counting those between.
func TestPerKeyLimit(t *testing.T) {
	l := &perKeyLimit{every: time.Minute}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		key  string
		at   time.Duration
		n    int
		want bool
	}{
		{"a", 0, 1, true},
		{"a", time.Second, 0, false},
		{"b", time.Second, 1, true},
		{"a", 59 * time.Second, 0, false},
		{"a", 60 * time.Second, 3, true},
		{"a", 61 * time.Second, 0, false},
		{"b", 200 * time.Second, 1, true},
	}
	for _, s := range steps {
		if n, ok := l.allow(s.key, t0.Add(s.at)); n != s.n || ok != s.want {
			t.Errorf("allow(%s, +%v) = %d, %v; want %d, %v", s.key, s.at, n, ok, s.n, s.want)
		}
	}
	for i := range perKeyLimitKeys + 10 {
		l.allow(fmt.Sprint(i), t0.Add(time.Duration(i)*time.Minute))
	}
	if len(l.keys) > perKeyLimitKeys {
		t.Errorf("%d keys kept, want at most %d", len(l.keys), perKeyLimitKeys)
	}
}
