package proc

import (
	"sync"
	"unicode/utf8"
)

// Tail keeps the last bytes written to it: the tail of a job's combined
// output, for the shared history. It is safe for concurrent use; the nil
// *Tail keeps nothing.
type Tail struct {
	size int
	mu   sync.Mutex
	// buf holds up to 2*size bytes, of which the last size count: cutting
	// it back to size only when it is full keeps Write amortized O(len(p))
	// without a ring buffer's index arithmetic.
	buf []byte
}

// NewTail returns a Tail keeping the last n bytes; n <= 0 keeps nothing.
func NewTail(n int) *Tail {
	return &Tail{size: max(n, 0)}
}

// Write keeps the last bytes of p. It never fails.
func (t *Tail) Write(p []byte) (int, error) {
	if t == nil || t.size == 0 {
		return len(p), nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf == nil {
		t.buf = make([]byte, 0, 2*t.size)
	}
	switch {
	case len(p) >= t.size:
		t.buf = append(t.buf[:0], p[len(p)-t.size:]...)
	case len(t.buf)+len(p) > cap(t.buf):
		keep := t.size - len(p) // < len(t.buf), as len(t.buf) > size
		t.buf = append(t.buf[:copy(t.buf, t.buf[len(t.buf)-keep:])], p...)
	default:
		t.buf = append(t.buf, p...)
	}
	return len(p), nil
}

// String returns the kept bytes, at most n of them. If they begin inside a
// UTF-8 sequence, its remaining continuation bytes are left out, so that the
// result never starts mid-rune; bytes that are not UTF-8 are kept as they are.
func (t *Tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf[max(len(t.buf)-t.size, 0):]
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return string(b[i:])
		}
	}
	if len(b) < utf8.UTFMax {
		return "" // the end of a cut rune and nothing more
	}
	// More continuation bytes than a rune can have: not UTF-8.
	return string(b)
}
