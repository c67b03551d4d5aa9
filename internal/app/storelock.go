package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrStoreInUse is returned when the embedded server's store directory is
// held by another cronlock process. nats-server does not guard its store, and
// two servers on one store would corrupt it, so cronlock locks the directory
// itself.
var ErrStoreInUse = errors.New("store directory is in use by another cronlock process")

// storeLockFile is the file, inside nats.embedded.store_dir, on which the
// process running the embedded server holds an exclusive lock. It contains
// that process's pid, for humans.
const storeLockFile = "cronlock.lock"

// storeLock is an exclusive, advisory lock on a store directory. The kernel
// drops it when the process dies, however it dies.
type storeLock struct {
	f *os.File
}

// lockStore creates dir if needed and locks it, or returns an error matching
// ErrStoreInUse that names the holder's pid when it can tell.
func lockStore(dir string) (*storeLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nats.embedded.store_dir: %w", err)
	}
	path := filepath.Join(dir, storeLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("nats.embedded.store_dir: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("nats.embedded.store_dir: lock %s: %w", path, err)
	}
	if !held {
		who := ""
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				who = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		f.Close()
		return nil, fmt.Errorf("nats.embedded.store_dir %q: %w%s", dir, ErrStoreInUse, who)
	}
	// Best effort: the pid only helps the message above.
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "%d\n", os.Getpid())
	}
	return &storeLock{f: f}, nil
}

// release drops the lock. The file stays: removing it would race with a
// process that has just opened it.
func (l *storeLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
