package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/natstest"
)

// floodLines is how many 100-byte lines the flooding job writes (20 MB).
const floodLines = 200_000

// A job that writes escape sequences and then floods: the console log shows
// its escape sequences neutralised and uncoloured (the log is not a
// terminal), logs its output within log.output_lines_per_second with a
// "[... N lines not logged]" line, and the history keeps the output's tail
// with its last lines.
func TestJobOutputInTheConsoleLog(t *testing.T) {
	t.Parallel()
	url := natstest.RunServer(t, natstest.Options{}).ClientURL()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", fmt.Sprintf(`
nats: {url: %s}
http: {listen: ""}
log: {format: console, output_lines_per_second: 20}
jobs:
  - name: flood
    schedule: "* * * * * *"
    env: {MARK: %q}
    shell: '[ -e "$MARK" ] && exit 0; touch "$MARK"; printf "\033[31mred\033[0m over\rwrite\n"; yes %s | head -n %d; echo last line'
`, url, filepath.Join(dir, "ran"), strings.Repeat("a", 99), floodLines))
	d := startDaemon(t, dir, cfg)
	running(d)
	d.waitOutput("lines not logged]", 60*time.Second)
	var status string
	waitFor(t, 30*time.Second, "the flood's tail in status -v", func() bool {
		status = cronlock(t, nil, "status", "-v", "-c", cfg, "flood").stdout
		return strings.Contains(status, "| last line")
	})
	d.stop()
	log := d.out.String()
	if strings.ContainsAny(log, "\x1b\r") {
		t.Errorf("the console log holds an escape or carriage return: %q", firstLineWith(log, "red"))
	}
	if want := "\uFFFD[31mred\uFFFD[0m over\uFFFDwrite"; !strings.Contains(log, want) {
		t.Errorf("console log line %q: want the job's escape sequences shown as %q", firstLineWith(log, "red"), want)
	}
	if n := strings.Count(log, "stream=stdout"); n > 200 {
		t.Errorf("%d of the job's %d lines logged, want at most 20 a second", n, floodLines)
	}
}

// firstLineWith returns the first line of s containing sub, or "".
func firstLineWith(s, sub string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}
