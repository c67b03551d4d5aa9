package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/config"
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
// either-day rule and Quartz's L.
func TestImportCrontab(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tab := writeFile(t, dir, "crontab", importTab)
	out := filepath.Join(dir, "cronlock.yaml")
	r := cronlock(t, nil, "import", "crontab", "-o", out, "--timezone", "Europe/Berlin", tab)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
	}
	for _, w := range []string{tab + ":5: @reboot", tab + ":6: day-of-month \"*/2\"",
		"2 line(s) of " + tab + " could not be converted; the 4 other job(s) were written to " + out} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if r.stdout != "" {
		t.Errorf("stdout with -o: %q", r.stdout)
	}

	bin := binary(t)
	validate := exec.Command(bin, "validate", "-c", out, "--from", "2026-03-01T00:00:00Z")
	if b, err := validate.CombinedOutput(); err != nil || !strings.Contains(string(b), "valid, 4 job(s)") {
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
	// Line 8's L (the last day of the month) converts as written.
	if b, err = exec.Command(bin, "next", "-c", out, "--from", "2026-03-01T00:00:00Z", "-n", "2", "echo-2").Output(); err != nil ||
		string(b) != "2026-03-31T00:00:00+02:00\n2026-04-30T00:00:00+02:00\n" {
		t.Errorf("next echo-2: %v\n%s", err, b)
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

// loadConfig loads the configuration at path with the loader validate uses.
func loadConfig(t *testing.T, path string) *config.Config {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(path, data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return cfg
}

// TestImportQuotedRoundTrip: names, commands and env values that unquoted
// YAML reads as booleans, numbers or null (a job named after /bin/true is
// "true") pass `cronlock validate` and load back as the same strings.
func TestImportQuotedRoundTrip(t *testing.T) {
	t.Parallel()
	values := []string{"true", "no", "on", "null", "1e3", "0x10", "~"}
	var tab strings.Builder
	for i, v := range values {
		tab.WriteString("V" + string(rune('A'+i)) + "=" + v + "\n")
	}
	cmds := []string{"/bin/true", "no", "on", "null", "1e3", "0x10", "~"}
	names := []string{"true", "no", "on", "null", "1e3", "0x10", "job"} // "~" has no letter for a name
	for i, c := range cmds {
		tab.WriteString("0 " + string(rune('0'+i)) + " * * * " + c + "\n")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "cronlock.yaml")
	r := cronlock(t, nil, "import", "crontab", "-o", out, "--timezone", "UTC", writeFile(t, dir, "crontab", tab.String()))
	if r.code != 0 {
		t.Fatalf("import: exit %d\n%s", r.code, r.stderr)
	}
	v := cronlock(t, nil, "validate", "-c", out)
	if v.code != 0 || !strings.Contains(v.stdout, "valid, 7 job(s)") {
		t.Fatalf("validate: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	for i, n := range names {
		if w := n + " (line "; !strings.Contains(v.stdout, w) {
			t.Errorf("validate lists no job %q:\n%s", n, v.stdout)
		}
		if w := "shell:    " + cmds[i] + "\n"; !strings.Contains(v.stdout, w) {
			t.Errorf("validate shows no command %q:\n%s", cmds[i], v.stdout)
		}
	}
	cfg := loadConfig(t, out)
	for i, j := range cfg.Jobs {
		if j.Name != names[i] || j.Shell != cmds[i] {
			t.Errorf("job %d: name %q command %q, want %q %q", i, j.Name, j.Shell, names[i], cmds[i])
		}
		for k, val := range values {
			if key := "V" + string(rune('A'+k)); j.Env[key] != val {
				t.Errorf("job %s: env %s = %q, want %q", j.Name, key, j.Env[key], val)
			}
		}
	}
}

// TestImportTZIsEnv: TZ= is the command's environment and does not move
// the schedule (cronie); CRON_TZ does. The case seen: TZ=Asia/Tokyo then
// "0 9 * * * date" on a Berlin host runs at 09:00 Berlin time.
func TestImportTZIsEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tab := writeFile(t, dir, "crontab", "TZ=Asia/Tokyo\n0 9 * * * date\nCRON_TZ=America/New_York\n0 9 * * * echo ny\n")
	out := filepath.Join(dir, "cronlock.yaml")
	if r := cronlock(t, nil, "import", "crontab", "--timezone", "Europe/Berlin", "-o", out, tab); r.code != 0 {
		t.Fatalf("import: exit %d\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct{ job, want string }{
		{"date", "2026-07-01T09:00:00+02:00\n"},
		{"echo", "2026-07-01T09:00:00-04:00\n"},
	} {
		r := cronlock(t, nil, "next", "-c", out, "--from", "2026-07-01T00:00:00Z", "-n", "1", tc.job)
		if r.code != 0 || r.stdout != tc.want {
			t.Errorf("next %s: exit %d %q, want %q\n%s", tc.job, r.code, r.stdout, tc.want, r.stderr)
		}
	}
	cfg := loadConfig(t, out)
	if j := cfg.Jobs[0]; j.Timezone != "Europe/Berlin" || j.Env["TZ"] != "Asia/Tokyo" {
		t.Errorf("timezone %q env TZ %q; want Europe/Berlin and Asia/Tokyo", j.Timezone, j.Env["TZ"])
	}
}

// systemTab is /etc/crontab as Debian ships it, with a cron.d style line.
const systemTab = `SHELL=/bin/sh
PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin
17 *	* * *	root	cd / && run-parts --report /etc/cron.hourly
25 6	* * *	root	test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }
09,39 * * * * www-data [ -x /usr/lib/php/sessionclean ] && /usr/lib/php/sessionclean
`

// TestImportSystemCrontabNeedsSystem: a crontab with a user field, given
// without --system, is refused with exit 2 and the hint, and nothing is
// written; with --system it converts. A user's crontab whose commands
// begin like user names (root-task.sh) is not refused.
func TestImportSystemCrontabNeedsSystem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tab := writeFile(t, dir, "crontab", systemTab)
	out := filepath.Join(dir, "cronlock.yaml")
	r := cronlock(t, nil, "import", "crontab", "-o", out, tab)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	want := tab + `:3: "root" after the time fields is a user name: this is a system crontab`
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "(hint: convert it with --system)") {
		t.Errorf("stderr %q, want %q and the hint", r.stderr, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output written: %v", err)
	}
	if r := cronlock(t, nil, "import", "crontab", "--system", "-o", out, tab); r.code != 0 {
		t.Fatalf("--system: exit %d\n%s", r.code, r.stderr)
	}
	if cfg := loadConfig(t, out); len(cfg.Jobs) != 3 || cfg.Jobs[0].Name != "run-parts-cron-hourly" {
		t.Errorf("--system: jobs %+v", cfg.Jobs)
	}

	user := writeFile(t, dir, "user", "0 * * * * root-task.sh\n0 1 * * * root-task.sh --all\n0 2 * * * backup --full\n")
	if r := cronlock(t, nil, "import", "crontab", user); r.code != 0 || !strings.Contains(r.stdout, `name: "root-task"`) {
		t.Errorf("a user's crontab: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestImportNoOverwrite: -o refuses an existing file (exit 2, the file
// unchanged) unless --force is given.
func TestImportNoOverwrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tab := writeFile(t, dir, "crontab", "0 3 * * * /usr/local/bin/backup.sh\n")
	const mine = "# my configuration\n"
	out := writeFile(t, dir, "cronlock.yaml", mine)
	r := cronlock(t, nil, "import", "crontab", "-o", out, tab)
	if r.code != 2 || !strings.Contains(r.stderr, "-o "+out+": the file exists and is left as it is; add --force to replace it") {
		t.Errorf("exit %d, stderr %q; want 2 and the refusal", r.code, r.stderr)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != mine {
		t.Fatalf("the existing file changed: %q %v", b, err)
	}
	if r := cronlock(t, nil, "import", "crontab", "--force", "-o", out, "--timezone", "UTC", tab); r.code != 0 {
		t.Fatalf("--force: exit %d\n%s", r.code, r.stderr)
	}
	if cfg := loadConfig(t, out); len(cfg.Jobs) != 1 || cfg.Jobs[0].Name != "backup" {
		t.Errorf("--force: jobs %+v", cfg.Jobs)
	}
}

// TestImportHostLocalNotes: host-local maintenance (logrotate, certbot,
// tmp cleanup, updatedb, fstrim, apt/dnf, run-parts) converts with run_on:
// every_replica and a comment saying why, and a line on stderr each; other
// jobs get neither. The output is golden (import_hostlocal.golden) and a
// valid configuration.
func TestImportHostLocalNotes(t *testing.T) {
	t.Parallel()
	tab := "testdata/hostlocal.crontab"
	r := cronlock(t, nil, "import", "crontab", "--timezone", "UTC", tab)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, w := range []string{
		tab + ":2: job logrotate: host-local maintenance (logrotate): written with run_on: every_replica",
		tab + ":3: job certbot: host-local maintenance (certbot)",
		tab + ":4: job find: host-local maintenance (find /tmp ... -delete)",
	} {
		if !strings.Contains(r.stderr, "cronlock import crontab: note: "+w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if n := strings.Count(r.stderr, "host-local"); n != 8 {
		t.Errorf("%d host-local notes on stderr, want 8:\n%s", n, r.stderr)
	}
	if n := strings.Count(r.stdout, "    run_on: \"every_replica\"\n"); n != 8 {
		t.Errorf("%d jobs with run_on: every_replica, want 8:\n%s", n, r.stdout)
	}
	golden(t, "import_hostlocal.golden", r.stdout)
	out := writeFile(t, t.TempDir(), "cronlock.yaml", r.stdout)
	if v := cronlock(t, nil, "validate", "-c", out); v.code != 0 {
		t.Errorf("validate the output: exit %d\n%s", v.code, v.stderr)
	}
}

// TestImportHelp: the usage text states the flags and the zone rule.
func TestImportHelp(t *testing.T) {
	t.Parallel()
	r := cronlock(t, nil, "import", "crontab", "--help")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, w := range []string{"--force", "--system", "--timezone", "Only CRON_TZ= sets a schedule's timezone",
		"TZ= does not move the", "Host-local maintenance", "/etc/cron.d"} {
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), strings.Join(strings.Fields(w), " ")) {
			t.Errorf("usage lacks %q:\n%s", w, r.stdout)
		}
	}
}
