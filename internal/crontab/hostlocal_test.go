package crontab

import (
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/config"
)

// TestHostLocalMaintenance: commands that look after the host are noted
// (a LineNote and a comment above the job) by the program they run; words
// that only contain such a name, or name it as an argument, are not.
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
		"on several replicas it runs on one host per tick, which is seldom what the crontab meant") {
		t.Errorf("line note %q", got)
	}
	out := string(res.YAML)
	comment := "  # host-local maintenance (logrotate): on several replicas it runs on one\n"
	if i, j := strings.Index(out, comment), strings.Index(out, `- name: "logrotate"`); i < 0 || j < i {
		t.Errorf("no comment above the job:\n%s", out)
	}
	if strings.Count(out, "host-local") != 1 {
		t.Errorf("the plain job has the comment too:\n%s", out)
	}
	if _, err := config.Parse("out.yaml", res.YAML); err != nil {
		t.Error(err)
	}
}
