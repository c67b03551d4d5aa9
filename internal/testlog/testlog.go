// Package testlog holds what tests share to capture logs. It is for tests
// only; the product never imports it.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that loggers on several goroutines (a daemon's,
// a server's, a scheduler's) may write to while the test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
