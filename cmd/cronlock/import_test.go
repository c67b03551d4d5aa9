package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A crontab with convertible lines and lines that must be reported.
const importTab = `# m h dom mon dow command
MAILTO=ops@example.com
0 3 * * * /usr/local/bin/backup.sh --full
0 12 1,15 * 5 echo first, fifteenth and fridays
@reboot /usr/local/bin/warm-cache
0 0 */2 * MON echo odd mondays
*/10 * * * * date +\%H:\%M
0 0 L * * echo last day
`

// TestImportCrontab: every bad line is reported with its line number, the
// good ones are still written, the exit code is 2; the output passes the
// built binary's validate, and next gives cron's times, including the
// either-day rule.
func TestImportCrontab(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tab := writeFile(t, dir, "crontab", importTab)
	out := filepath.Join(dir, "cronlock.yaml")
	r := cronlock(t, nil, "import", "crontab", "-o", out, "--timezone", "Europe/Berlin", tab)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
	}
	for _, w := range []string{tab + ":5: @reboot", tab + ":6: day-of-month \"*/2\"", tab + ":8: day-of-month field \"L\"",
		"3 line(s) of " + tab + " could not be converted; the 3 other job(s) were written to " + out} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if r.stdout != "" {
		t.Errorf("stdout with -o: %q", r.stdout)
	}

	bin := binary(t)
	validate := exec.Command(bin, "validate", "-c", out, "--from", "2026-03-01T00:00:00Z")
	if b, err := validate.CombinedOutput(); err != nil || !strings.Contains(string(b), "valid, 3 job(s)") {
		t.Fatalf("cronlock validate: %v\n%s", err, b)
	}
	next := exec.Command(bin, "next", "-c", out, "--from", "2026-03-01T00:00:00Z", "-n", "5", "echo")
	b, err := next.Output()
	if err != nil {
		t.Fatalf("cronlock next: %v", err)
	}
	// Sunday the 1st, Fridays the 6th, 13th and 20th, Sunday the 15th.
	want := "2026-03-01T12:00:00+01:00\n2026-03-06T12:00:00+01:00\n2026-03-13T12:00:00+01:00\n" +
		"2026-03-15T12:00:00+01:00\n2026-03-20T12:00:00+01:00\n"
	if string(b) != want {
		t.Errorf("next:\n%s\nwant\n%s", b, want)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `shell: "date +%H:%M"`) {
		t.Errorf("\\%% not turned into %%:\n%s", data)
	}
}

// TestImportCrontabStdin: "-" reads standard input and the configuration
// goes to standard output; exit 0 when every line converts.
func TestImportCrontabStdin(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary(t), "import", "crontab", "-")
	cmd.Stdin = strings.NewReader("CRON_TZ=America/New_York\n30 6 * * 1-5 echo morning\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, w := range []string{"from stdin", "stdin line 2: 30 6 * * 1-5 echo morning", `timezone: "America/New_York"`} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, stdout.String())
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// TestImportUsage: bad invocations exit 2 with a message.
func TestImportUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty", "# nothing\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import"}, "missing the format"},
		{[]string{"import", "anacrontab", "x"}, `unknown format "anacrontab"`},
		{[]string{"import", "-o", "x", "crontab", "y"}, "flags come after the format"},
		{[]string{"import", "crontab"}, "missing CRONTAB"},
		{[]string{"import", "crontab", filepath.Join(dir, "nope")}, "not found"},
		{[]string{"import", "crontab", "--timezone", "Mars/Base", empty}, `--timezone "Mars/Base": unknown time zone`},
		{[]string{"import", "crontab", empty}, "no cron entries"},
	} {
		r := cronlock(t, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
