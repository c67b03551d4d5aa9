package crontab

import (
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/config"
)

// TestHostLocalMaintenance: commands that look after the host run on every
// replica (run_on: every_replica with a comment saying why, and a
// LineNote) by the program they run; words that only contain such a name,
// or name it as an argument, are not.
func TestHostLocalMaintenance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cmd, want string }{
		{"/usr/sbin/logrotate /etc/logrotate.conf", "logrotate"},
		{"test -x /usr/sbin/logrotate && /usr/sbin/logrotate /etc/logrotate.conf", "logrotate"},
		{"[ -x /usr/bin/certbot ] && certbot -q renew", "certbot"},
		{"sudo -n certbot renew --quiet", "certbot"},
		{"flock -n /run/lock/certbot.lock certbot renew", "certbot"},
		{"nice -n 19 ionice -c3 updatedb", "updatedb"},
		{"/sbin/fstrim --all", "fstrim"},
		{"apt-get update -qq && apt-get -y upgrade", "apt-get"},
		{"DEBIAN_FRONTEND=noninteractive apt upgrade -y", "apt"},
		{"dnf -y makecache", "dnf"},
		{"yum -q -y update", "yum"},
		{"cd / && run-parts --report /etc/cron.daily", "run-parts"},
		{"test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.daily )", "run-parts"},
		{"find /tmp -type f -mtime +7 -delete", tmpCleanup},
		{"find /var/tmp/cache/ -name '*.tmp' -exec rm -f {} +", tmpCleanup},
		{"timeout 1h find /tmp/ -mindepth 1 -delete", tmpCleanup},
		{`sh -c "logrotate -f /etc/logrotate.d/app"`, "logrotate"},

		{"/usr/local/bin/logrotate-report.sh", ""},
		{"test -x /usr/sbin/logrotate || exit 0", ""},
		{"echo logrotate done", ""},
		{"/srv/app/bin/apt-mirror-sync", ""},
		{"find /srv/data -mtime +7 -delete", ""},
		{"find /tmp -name '*.lock' -print", ""},
		{"/usr/bin/yummy --dnf", ""},
		{"backup.sh /tmp", ""},
	} {
		if got := hostLocal(tc.cmd); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.cmd, got, tc.want)
		}
	}

	tab := "0 3 * * * echo plain\n0 4 * * * /usr/sbin/logrotate /etc/logrotate.conf\n"
	res, err := Convert([]byte(tab), Options{Source: "tab"})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("%v %v", err, res.Errors)
	}
	if len(res.LineNotes) != 1 {
		t.Fatalf("line notes %v, want one", res.LineNotes)
	}
	if got := res.LineNotes[0].String(); !strings.HasPrefix(got, "tab:2: job logrotate: host-local maintenance (logrotate): "+
		"written with run_on: every_replica") {
		t.Errorf("line note %q", got)
	}
	out := string(res.YAML)
	comment := "    # host-local maintenance (logrotate): every replica runs it on its own\n"
	key := "    run_on: \"every_replica\"\n"
	if i, j := strings.Index(out, comment), strings.Index(out, key); i < 0 || j < i || strings.Index(out, `- name: "logrotate"`) > i {
		t.Errorf("no run_on: every_replica with its comment in the job:\n%s", out)
	}
	if strings.Count(out, "host-local") != 1 || strings.Count(out, "run_on") != 2 { // the key, and the comment's "run_on: one"
		t.Errorf("the plain job has run_on or the comment too:\n%s", out)
	}
	cfg, err := config.Parse("out.yaml", res.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Jobs[0].RunOn != "" || cfg.Jobs[1].RunOn != "every_replica" {
		t.Errorf("run_on %q, %q: want \"\" and every_replica", cfg.Jobs[0].RunOn, cfg.Jobs[1].RunOn)
	}
}
