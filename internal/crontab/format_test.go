package crontab

import (
	"errors"
	"testing"
)

// TestSystemCrontabDetected: a crontab with a user field given without
// System is refused with the first entry naming a well-known account;
// user crontabs, even with words like root-task.sh or backup in the
// command's place, are converted.
func TestSystemCrontabDetected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tab string
		line      int // 0: a user's crontab
		user      string
	}{
		{"debian /etc/crontab", "SHELL=/bin/sh\nPATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin\n" +
			"17 *\t* * *\troot\tcd / && run-parts --report /etc/cron.hourly\n" +
			"25 6\t* * *\troot\ttest -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }\n", 3, "root"},
		{"cron.d file", "# php\n09,39 *     * * *     www-data   [ -x /usr/lib/php/sessionclean ] && /usr/lib/php/sessionclean\n", 2, "www-data"},
		{"other users first", "0 4 * * * deploy /srv/app/bin/cleanup\n@daily postgres vacuumdb --all\n", 2, "postgres"},
		{"a broken entry aside", "0 0 * * * root\n*/5 * * * * root /usr/bin/check\n", 2, "root"},
		{"user crontab", "0 3 * * * /usr/local/bin/backup.sh --full\n*/5 * * * * date\n", 0, ""},
		{"root-task.sh", "0 * * * * root-task.sh\n0 1 * * * root-task.sh --all\n", 0, ""},
		{"account-like commands", "0 * * * * backup --full\n0 1 * * * mail -s hi ops < /dev/null\n", 0, ""},
		{"root program beside a user entry", "0 * * * * root -b -q macro.C\n0 1 * * * /usr/bin/report\n", 0, ""},
		{"root program alone on its line", "0 * * * * root -b -q macro.C\n0 1 * * * date\n", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Convert([]byte(tc.tab), Options{Source: "tab"})
			var se *SystemFormatError
			if tc.line == 0 {
				if err != nil || res.Jobs == 0 {
					t.Fatalf("a user's crontab refused: %v", err)
				}
				return
			}
			if !errors.As(err, &se) || se.Line != tc.line || se.User != tc.user || se.Source != "tab" {
				t.Fatalf("err %v (%#v); want a SystemFormatError at line %d for %q", err, se, tc.line, tc.user)
			}
			if res, err := Convert([]byte(tc.tab), Options{System: true}); err != nil || res.Jobs == 0 {
				t.Errorf("with System: %v", err)
			}
		})
	}
}
