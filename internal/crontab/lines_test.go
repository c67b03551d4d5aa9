package crontab

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronlock/cronlock/internal/config"
	"github.com/cronlock/cronlock/job"
)

// TestReportedLines: every line that cannot be converted is reported with
// its line number and reason (and a hint where one helps); the other lines
// are still converted.
func TestReportedLines(t *testing.T) {
	t.Parallel()
	bad := []struct{ line, want, hint string }{
		{"@reboot /usr/bin/startup", "@reboot is not supported", "service manager"},
		{"@fortnightly echo", `unknown schedule "@fortnightly"`, "@daily"},
		{"0 0 L * 1 echo", "combine them with another restricted day field", "write the other day field as *"},
		{"0 0 15 * 5#2 echo", "combine them with another restricted day field", "one line per day field"},
		{"0 0 32W * * echo", `day-of-month field "32W": want nW with a day n of 1 to 31`, ""},
		{"0 0 * * 1#6 echo", `day-of-week field "1#6": want d#k with k 1 to 5`, ""},
		{"0 0 ?,1 * MON echo", "? is not cron syntax", "write * instead"},
		{"0 ~ * * * echo", "~ (a random value)", "fixed value"},
		{"H * * * * echo", "H (a hashed value", "fixed value"},
		{"0 0 1 1 * 2027 echo", `"2027" in place of the command looks like a sixth time field`, "five time fields"},
		{"5/10 * * * * echo", "a step after a single value", "5-59/10"},
		{"61 * * * * echo", "minute field \"61\": 61 is outside 0-59", ""},
		{"0 0 * * 8 echo", "day-of-week field \"8\": 8 is outside 0-7", ""},
		{"0 0 * foo * echo", `"foo" is not a number or a month name`, ""},
		{"0 0 5-1 * * echo", "range runs backwards", ""},
		{"*/0 * * * * echo", "step \"0\" is not a positive number", ""},
		{"0 0 * * *", "no command", ""},
		{"0 0 * *", "not a cron entry", "minute hour"},
		{"hello world", "not a cron entry", "minute hour"},
		{"1X=2", `"1X" is not a valid variable name`, "letters"},
		{"0 0 */2 * MON echo", "only on days that match both", "test the other"},
		{"0 0 * * * %input only", "no command before '%'", ""},
		{"0 0 30 2 * echo never", `schedule "0 0 30 2 *" never fires`, "day-of-month"},
		{"0 0 31 4,jun * echo never", `schedule "0 0 31 4,jun *" never fires`, "day-of-month"},
	}
	var tab strings.Builder
	tab.WriteString("# a comment\n\n   \t\n")
	first := 4
	for i, b := range bad {
		tab.WriteString(b.line + "\n")
		if i == len(bad)/2 {
			tab.WriteString("  0 3 * * * echo fine\n") // leading blanks are fine
		}
	}
	res, err := Convert([]byte(tab.String()), Options{Source: "my.cron"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 1 {
		t.Errorf("%d jobs, want the one good line converted", res.Jobs)
	}
	if len(res.Errors) != len(bad) {
		t.Fatalf("%d errors, want %d:\n%v", len(res.Errors), len(bad), res.Errors)
	}
	for i, b := range bad {
		line := first + i
		if i > len(bad)/2 {
			line++
		}
		got := res.Errors[i].Error()
		prefix := "my.cron:" + strconv.Itoa(line) + ": "
		if !strings.HasPrefix(got, prefix) || !strings.Contains(got, b.want) {
			t.Errorf("line %q: error %q, want prefix %q and %q", b.line, got, prefix, b.want)
		}
		if b.hint != "" && !strings.Contains(res.Errors[i].Hint, b.hint) {
			t.Errorf("line %q: hint %q lacks %q", b.line, res.Errors[i].Hint, b.hint)
		}
	}
	if _, err := config.Parse("out.yaml", res.YAML); err != nil {
		t.Errorf("output with the good line does not load: %v", err)
	}
}

// TestEnvironmentShellAndZones: NAME=value lines apply to the entries after
// them; SHELL makes the job [SHELL, -c, line]; only CRON_TZ becomes
// timezone (TZ stays in the job's env, as written, as under cronie),
// --timezone fills in and is the env TZ where the crontab sets none, and
// jobs left in UTC are noted.
func TestEnvironmentShellAndZones(t *testing.T) {
	t.Parallel()
	tab := `MAILTO = "ops@example.com"
0 1 * * * /usr/local/bin/backup.sh --full
PATH='/usr/local/bin:/usr/bin:/bin'
TZ=America/New_York
SHELL=/bin/bash
0 2 * * * echo "$PATH"
CRON_TZ=Asia/Tokyo
0 3 * * * echo tokyo
CRON_TZ=
TZ=
0 4 * * * echo host
`
	res, err := Convert([]byte(tab), Options{})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("%v %v", err, res.Errors)
	}
	cfg, err := config.Parse("out.yaml", res.YAML)
	if err != nil {
		t.Fatalf("%v\n%s", err, res.YAML)
	}
	js := cfg.Jobs
	if len(js) != 4 {
		t.Fatalf("%d jobs", len(js))
	}
	check := func(i int, zone string, shell string, argv []string, env map[string]string) {
		t.Helper()
		j := js[i]
		if j.Timezone != zone || j.Shell != shell || !slices.Equal(j.Command, argv) {
			t.Errorf("job %d: timezone %q shell %q command %q; want %q %q %q", i, j.Timezone, j.Shell, j.Command, zone, shell, argv)
		}
		if !maps.Equal(j.Env, env) {
			t.Errorf("job %d: env %v, want %v", i, j.Env, env)
		}
	}
	mail := "ops@example.com"
	path := "/usr/local/bin:/usr/bin:/bin"
	check(0, "", "/usr/local/bin/backup.sh --full", nil, map[string]string{"MAILTO": mail})
	check(1, "", "", []string{"/bin/bash", "-c", `echo "$PATH"`},
		map[string]string{"MAILTO": mail, "PATH": path, "TZ": "America/New_York", "SHELL": "/bin/bash"})
	check(2, "Asia/Tokyo", "", []string{"/bin/bash", "-c", "echo tokyo"},
		map[string]string{"MAILTO": mail, "PATH": path, "TZ": "America/New_York", "SHELL": "/bin/bash"})
	check(3, "", "", []string{"/bin/bash", "-c", "echo host"}, // TZ= is an empty TZ (UTC) for the command
		map[string]string{"MAILTO": mail, "PATH": path, "TZ": "", "SHELL": "/bin/bash"})
	out := string(res.YAML)
	for _, w := range []string{"3 job(s) below have no timezone",
		`# TZ="America/New_York" stays in env: it is the command's local time`} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if len(res.Notes) != 1 {
		t.Errorf("notes %q, want the one on jobs left in UTC", res.Notes)
	}

	res, err = Convert([]byte(tab), Options{Timezone: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = config.Parse("out.yaml", res.YAML)
	if err != nil {
		t.Fatal(err)
	}
	var zones, envTZ []string
	for _, j := range cfg.Jobs {
		zones, envTZ = append(zones, j.Timezone), append(envTZ, j.Env["TZ"])
	}
	if want := []string{"Europe/Berlin", "Europe/Berlin", "Asia/Tokyo", "Europe/Berlin"}; !slices.Equal(zones, want) {
		t.Errorf("--timezone: zones %q, want %q", zones, want)
	}
	// The host's zone was the commands' local time too, where the crontab
	// set no TZ.
	if want := []string{"Europe/Berlin", "America/New_York", "America/New_York", ""}; !slices.Equal(envTZ, want) {
		t.Errorf("--timezone: env TZ %q, want %q", envTZ, want)
	}
	if len(res.Notes) != 0 || strings.Contains(string(res.YAML), "no timezone") {
		t.Errorf("a UTC note although every job has a zone: %q", res.Notes)
	}
	if _, err := Convert([]byte(tab), Options{Timezone: "Mars/Base"}); err == nil {
		t.Error("an unknown --timezone is accepted")
	}
}

// TestTZMovesNoSchedule: the case that was seen, TZ=Asia/Tokyo then
// "0 9 * * * date", runs at 09:00 in the host's zone (--timezone), not in
// Tokyo, with TZ=Asia/Tokyo in the command's environment; an unknown TZ is
// only the command's business and is kept, not reported.
func TestTZMovesNoSchedule(t *testing.T) {
	t.Parallel()
	j := convertOne(t, "TZ=Asia/Tokyo\n0 9 * * * date\n", Options{Timezone: "Europe/Berlin"})
	if j.Timezone != "Europe/Berlin" || j.Env["TZ"] != "Asia/Tokyo" {
		t.Fatalf("timezone %q, env TZ %q; want Europe/Berlin and Asia/Tokyo", j.Timezone, j.Env["TZ"])
	}
	s, err := job.ParseSchedule(j.Schedule, j.Location)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	if got, want := s.Next(from), time.Date(2026, 7, 1, 7, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("next run %v, want %v (09:00 in Berlin)", got, want)
	}
	j = convertOne(t, "TZ=Not/AZone\n0 9 * * * date\n", Options{})
	if j.Timezone != "" || j.Env["TZ"] != "Not/AZone" {
		t.Errorf("timezone %q, env TZ %q", j.Timezone, j.Env["TZ"])
	}
}

// TestUnknownZoneReported: an unknown CRON_TZ is reported, and so is every
// entry it would apply to, instead of running them in another zone.
func TestUnknownZoneReported(t *testing.T) {
	t.Parallel()
	res, err := Convert([]byte("CRON_TZ=Mars/Base\n0 0 * * * echo a\nCRON_TZ=UTC\n0 0 * * * echo b\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 1 || len(res.Errors) != 2 ||
		!strings.Contains(res.Errors[0].Error(), "crontab:1: CRON_TZ=Mars/Base: unknown time zone") ||
		!strings.Contains(res.Errors[1].Error(), "crontab:2: the time zone set at line 1 is unknown") {
		t.Errorf("jobs %d, errors %v", res.Jobs, res.Errors)
	}
}

// TestSystemCrontab: --system reads the user field and says in the output
// that cronlock does not switch users.
func TestSystemCrontab(t *testing.T) {
	t.Parallel()
	tab := "SHELL=/bin/sh\n17 * * * * root cd / && run-parts --report /etc/cron.hourly\n" +
		"@daily www-data php /var/www/artisan schedule:run\n0 0 * * * root\n0 0 1 1 * 2027 root echo\n"
	res, err := Convert([]byte(tab), Options{System: true, Source: "/etc/crontab", Timezone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 2 || len(res.Errors) != 2 {
		t.Fatalf("jobs %d, errors %v", res.Jobs, res.Errors)
	}
	cfg, err := config.Parse("out.yaml", res.YAML)
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.YAML)
	for _, w := range []string{"cronlock does not switch users", "cron ran this as user root", "cron ran this as user www-data"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if got := cfg.Jobs[0].Command; !slices.Equal(got, []string{"/bin/sh", "-c", "cd / && run-parts --report /etc/cron.hourly"}) {
		t.Errorf("command %q", got)
	}
	if cfg.Jobs[1].Name != "php-artisan" || cfg.Jobs[0].Name != "run-parts-cron-hourly" {
		t.Errorf("names %q %q", cfg.Jobs[0].Name, cfg.Jobs[1].Name)
	}
	for i, w := range []string{"/etc/crontab:4: no command", "/etc/crontab:5: \"2027\" in place of the user"} {
		if !strings.HasPrefix(res.Errors[i].Error(), w) {
			t.Errorf("error %q, want %q", res.Errors[i], w)
		}
	}
}

// TestNamesUniqueAndValid: names come from the command and never clash.
func TestNamesUniqueAndValid(t *testing.T) {
	t.Parallel()
	tab := `0 1 * * * /usr/local/bin/backup.sh --full
0 2 * * * /usr/local/bin/backup.sh --incremental
0 3 * * * backup-2
0 4 * * * LANG=C /opt/Weird\ Tool!/Run.PY # the name stops at the first blank
0 5 * * * run-parts /etc/cron.daily
0 6 * * * python3 -u /srv/jobs/clean_up.py
0 7 * * * ./!!!
0 8 * * * ` + strings.Repeat("x", 300) + `
0 9 * * * backup
0 10 * * MON [ $(( $(date +\%-d) \% 2 )) = 1 ] && /usr/local/bin/rotate-keys
0 11 * * * cd /srv/app && make -s clean; true
`
	res, err := Convert([]byte(tab), Options{})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("%v %v", err, res.Errors)
	}
	cfg, err := config.Parse("out.yaml", res.YAML)
	if err != nil {
		t.Fatalf("%v\n%s", err, res.YAML)
	}
	var got []string
	for _, j := range cfg.Jobs {
		if err := job.ValidateName(j.Name); err != nil {
			t.Error(err)
		}
		got = append(got, j.Name)
	}
	want := []string{"backup", "backup-2", "backup-2-2", "weird", "run-parts-cron-daily", "python3-clean_up",
		"job", strings.Repeat("x", maxBaseName), "backup-3", "rotate-keys", "make"}
	if !slices.Equal(got, want) {
		t.Errorf("names\n%q\nwant\n%q", got, want)
	}
}

// TestPercentIsInput runs converted commands in a real shell: the text
// after the first '%' reaches the command's standard input with '%' as
// newlines, "\%" is a literal '%' in both parts, as under cron.
func TestPercentIsInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, shell, cmd string
		want             string // what the command writes to out
	}{
		{"input", "", `cat > out%line one%line \%two`, "line one\nline %two\n"},
		{"whole command reads it", "", `read a; read b; echo "$b $a" > out%first%second`, "second first\n"},
		{"trailing newline kept", "", `cat > out%a%`, "a\n"},
		{"empty input", "", `cat > out%`, ""},
		{"escaped percent only", "", `printf '\%s|' x > out`, "x|"},
		{"backslashes kept", "", `cat > out%a\\b\c`, "a\\\\b\\c\n"},
		{"delimiter in input", "", `cat > out%CRONLOCK_INPUT%x`, "CRONLOCK_INPUT\nx\n"},
		{"bash", "/bin/bash", `cat > out%from bash`, "from bash\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := "0 0 * * * " + tc.cmd + "\n"
			if tc.shell != "" {
				if _, err := os.Stat(tc.shell); err != nil {
					t.Skipf("%s: %v", tc.shell, err)
				}
				tab = "SHELL=" + tc.shell + "\n" + tab
			}
			j := convertOne(t, tab, Options{})
			argv := j.Command
			if j.Shell != "" {
				argv = []string{"/bin/sh", "-c", j.Shell}
			}
			wd := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.Mkdir(wd, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = wd
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%q: %v\n%s", argv, err, out)
			}
			got, err := os.ReadFile(filepath.Join(wd, "out"))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("%q wrote %q, want %q", argv, got, tc.want)
			}
		})
	}
}

// TestPercentWithOtherShell: input for a shell without here-documents is
// reported.
func TestPercentWithOtherShell(t *testing.T) {
	t.Parallel()
	res, err := Convert([]byte("SHELL=/usr/bin/fish\n0 0 * * * cat%hi\n0 0 * * * echo no input\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 1 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "crontab:2: the text after '%' is the command's input") {
		t.Errorf("jobs %d, errors %v", res.Jobs, res.Errors)
	}
}
