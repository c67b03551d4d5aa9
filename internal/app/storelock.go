package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// ErrStoreInUse is returned when the embedded server's store directory is
// held by another cronlock process. nats-server does not guard its store, and
// two servers on one store would corrupt it, so cronlock locks the directory
// itself.
var ErrStoreInUse = errors.New("store directory is in use by another cronlock process")

// ErrNoStore is returned to an operator command in embedded mode when
// nats.embedded.store_dir holds no store: no `cronlock run` of this
// configuration has run on this host, or it keeps its store elsewhere. The
// command does not create one: an empty store would report every job as
// never run.
var ErrNoStore = errors.New("no cronlock store")

// checkStore returns an error matching ErrNoStore, naming the absolute
// path looked at, unless dir holds the JetStream store a daemon's embedded
// server made there.
func checkStore(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	js := filepath.Join(abs, server.JetStreamStoreDir)
	fi, err := os.Stat(js)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil || errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("nats.embedded.store_dir: %w at %s (looked for %s): no `cronlock run` with this "+
			"configuration has used it on this host; run the command where the daemon runs, with its "+
			"configuration file (relative paths are relative to the file's folder), or set nats.url to its server",
			ErrNoStore, abs, js)
	default:
		return fmt.Errorf("nats.embedded.store_dir: %w", err)
	}
}

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
