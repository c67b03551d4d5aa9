package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// A notification command still running when cronlock is SIGKILLed dies
// with it, children included; and the notifier's log lines, here a failing
// webhook's, carry each key once.
func TestNotifyCommandDiesWithCronlock(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(hook.Close)
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`
nats: {url: %s}
http: {listen: ""}
notify:
  - command: ["sh", "-c", 'sleep 60 & echo "$$ $!" > "$0.tmp"; mv "$0.tmp" "$0"; wait', %q]
    on: [failure]
  - webhook: %q
    on: [failure]
jobs:
  - name: broken
    schedule: "* * * * * *"
    shell: exit 3
`, url, pids, hook.URL))
	d := startDaemon(t, dir, cfg)
	running(d)
	var sh, sleep int
	waitFor(t, 30*time.Second, "the notification command's pids", func() bool {
		b, _ := os.ReadFile(pids)
		_, err := fmt.Sscan(string(b), &sh, &sleep)
		return err == nil
	})
	d.waitOutput("notification failed; retrying", 30*time.Second)
	d.kill()
	waitFor(t, 10*time.Second, "the notification command and its child gone", func() bool { return gone(sh) && gone(sleep) })

	for line := range strings.SplitSeq(d.out.String(), "\n") {
		if strings.Contains(line, `"notification failed; retrying"`) {
			if dup := duplicateKey(t, line); dup != "" || !strings.Contains(line, `"component":"notify"`) {
				t.Errorf("notify log line %s: key %q appears twice, or no component notify", line, dup)
			}
		}
	}
}

// duplicateKey returns a top-level key of the JSON object line that appears
// more than once, or "". (encoding/json keeps the last one silently.)
func duplicateKey(t *testing.T, line string) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(line)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("log line %q: not a JSON object", line)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		key := tok.(string)
		if seen[key] {
			return key
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil && err != io.EOF {
			t.Fatalf("log line %q: %v", line, err)
		}
	}
	return ""
}
