package app

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/oklog/run"
	"github.com/rs/zerolog"

	"github.com/cronlock/cronlock/internal/config"
)

// watchDebounce is how long the watcher waits after the last event touching
// the configuration file before it reads the file. One save is several
// events within milliseconds (an editor's create, write, chmod and rename; a
// ConfigMap update's new directory, symlink and rename), and reading in the
// middle could see a file about to be replaced.
const watchDebounce = 200 * time.Millisecond

// configMapData is the symlink through which a Kubernetes ConfigMap volume
// exposes its files: cronlock.yaml -> ..data/cronlock.yaml, ..data ->
// ..<timestamp>. An update writes a new timestamped directory and renames a
// new symlink over ..data, so only ..data is touched, never cronlock.yaml.
const configMapData = "..data"

// fileState is what the watcher last saw of the configuration file: a hash
// of its bytes as read through its path (so through any symlinks), or the
// read error. Comparing states rather than reacting to events means a burst
// of events, or an event that did not change the content, reloads nothing.
type fileState struct {
	sum     [sha256.Size]byte
	readErr string
}

// readState reads through config.ReadFile, so that a file over its size
// limit is not read whole: it is a read error here, and Reload reports it.
func readState(path string) (fileState, []byte) {
	data, err := config.ReadFile(path)
	if err != nil {
		return fileState{readErr: err.Error()}, nil
	}
	return fileState{sum: sha256.Sum256(data)}, data
}

// configWatcher calls the daemon's Reload, the one SIGHUP calls, whenever
// the content of the configuration file changes.
//
// It watches the directory holding the file, not the file: editors that
// save by writing a new file and renaming it over the old one (vim), and
// Kubernetes ConfigMap updates, which swap the ..data symlink, replace the
// file's inode, and a watch on the old inode would see nothing more. When
// the file is a symlink, the directory of the file it resolves to is
// watched as well, so that editing the target in place is seen too.
type configWatcher struct {
	d      *Daemon
	log    zerolog.Logger
	fsw    *fsnotify.Watcher
	path   string // absolute path of the configuration file
	target string // path resolves to this file; "" if it cannot be resolved
	last   fileState
}

// newConfigWatcher starts watching the directory of the daemon's
// configuration file.
func (d *Daemon) newConfigWatcher() (*configWatcher, error) {
	path, err := filepath.Abs(d.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("config_watch: %w", err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("config_watch: %w", err)
	}
	w := &configWatcher{d: d, log: d.log.With().Str("config", d.cfg.Path).Logger(), fsw: fsw, path: path}
	if err := fsw.Add(filepath.Dir(path)); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("config_watch: watch %s: %w", filepath.Dir(path), err)
	}
	w.follow()
	return w, nil
}

// run reloads on changes until stop is closed, then releases the watch.
// The file may have changed between the daemon's first load and the start
// of the watch (start-up can wait long for NATS); if what is on disk now is
// not the configuration in effect, run reloads at once.
func (w *configWatcher) run(stop <-chan struct{}) {
	defer w.fsw.Close()
	state, data := readState(w.path)
	w.last = state
	if !w.d.inEffect(data) {
		w.log.Info().Msg("configuration file changed during start-up; reloading")
		w.d.Reload()
	}
	w.log.Info().Str("dir", filepath.Dir(w.path)).Msg("watching the configuration file for changes (config_watch)")

	debounce := time.NewTimer(watchDebounce)
	debounce.Stop()
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if w.relevant(ev) {
				debounce.Reset(watchDebounce)
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.log.Warn().Err(err).Msg("config_watch: watcher error; checking the file")
			debounce.Reset(watchDebounce) // an overflow may have dropped events
		case <-debounce.C:
			w.check()
		}
	}
}

// relevant reports whether ev may have changed what the configuration path
// reads: an event on the file itself, on a ConfigMap's ..data symlink next
// to it, or on the file the path resolves to. Other files in the directory
// (job output, the embedded server's store) are ignored.
func (w *configWatcher) relevant(ev fsnotify.Event) bool {
	name := filepath.Clean(ev.Name)
	return name == w.path || name == filepath.Join(filepath.Dir(w.path), configMapData) ||
		(w.target != "" && (name == w.target || name == filepath.Dir(w.target)))
}

// check reloads if the file's content differs from when it was last seen.
func (w *configWatcher) check() {
	state, _ := readState(w.path)
	w.follow()
	if state == w.last {
		return
	}
	w.last = state
	w.log.Info().Msg("configuration file changed; reloading")
	w.d.Reload()
}

// follow resolves the configuration path through its symlinks and watches
// the directory of the file it leads to, if that is not the directory
// already watched, dropping the watch of a previous target's directory.
func (w *configWatcher) follow() {
	target, err := filepath.EvalSymlinks(w.path)
	if err != nil {
		return // missing for now; the directory watch sees it come back
	}
	if target, err = filepath.Abs(target); err != nil || target == w.target {
		return
	}
	dir, oldDir := filepath.Dir(target), ""
	if w.target != "" {
		oldDir = filepath.Dir(w.target)
	}
	w.target = target
	if dir == oldDir {
		return
	}
	watched := w.fsw.WatchList()
	if oldDir != "" && oldDir != filepath.Dir(w.path) && slices.Contains(watched, oldDir) {
		// Already gone when its directory was deleted (a ConfigMap update).
		if err := w.fsw.Remove(oldDir); err != nil && !errors.Is(err, fsnotify.ErrNonExistentWatch) {
			w.log.Debug().Err(err).Str("dir", oldDir).Msg("config_watch: unwatch")
		}
	}
	if !slices.Contains(watched, dir) {
		if err := w.fsw.Add(dir); err != nil {
			w.log.Warn().Err(err).Str("dir", dir).Msg("config_watch: cannot watch the directory the configuration file links to; edits there are not seen")
		}
	}
}

// inEffect reports whether data, read from the configuration file, decodes
// to the configuration in effect: the same jobs and the same settings.
func (d *Daemon) inEffect(data []byte) bool {
	if data == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if sha256.Sum256(data) == d.cfg.Digest {
		return true // the bytes in effect: no second parse
	}
	next, err := config.Parse(d.cfg.Path, data)
	if err != nil || len(next.Jobs) != len(d.cfg.Jobs) || len(restartSections(d.cfg, next)) > 0 {
		return false
	}
	for i := range next.Jobs {
		if !sameJob(next.Jobs[i], d.cfg.Jobs[i]) {
			return false
		}
	}
	return true
}

// addConfigWatch adds to g, when config_watch is on, the actor that reloads
// on changes of the configuration file. A watch that cannot be set up (the
// inotify limits of a crowded host, say) is logged and left out rather than
// stopping the daemon: its jobs matter more, and SIGHUP still reloads.
func (d *Daemon) addConfigWatch(g *run.Group) {
	if !d.cfg.ConfigWatch {
		return
	}
	w, err := d.newConfigWatcher()
	if err != nil {
		d.log.Error().Err(err).Msg("the configuration file is not watched; reload with SIGHUP")
		return
	}
	stop := make(chan struct{})
	g.Add(func() error {
		w.run(stop)
		return nil
	}, func(error) { close(stop) })
}
