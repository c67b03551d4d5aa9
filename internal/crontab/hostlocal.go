package crontab

import (
	"path"
	"strings"
)

// maintenancePrograms are programs that look after the host they run on:
// its logs, certificates, package database, file index, disks, clock, the
// scripts in its /etc/cron.* folders. A crontab runs them on every host
// that has it; cronlock runs each tick on one replica unless the job says
// run_on: every_replica, which the importer writes for them.
var maintenancePrograms = map[string]bool{
	"logrotate": true, "logwatch": true, "journalctl": true,
	"certbot": true, "certbot-auto": true, "letsencrypt": true, "acme.sh": true,
	"updatedb": true, "updatedb.mlocate": true, "updatedb.plocate": true, "mandb": true,
	"fstrim": true, "e2scrub_all": true, "hwclock": true, "ntpdate": true,
	"apt": true, "apt-get": true, "aptitude": true, "unattended-upgrade": true, "unattended-upgrades": true,
	"dnf": true, "yum": true, "zypper": true, "apk": true,
	"run-parts": true, "anacron": true,
	"tmpreaper": true, "tmpwatch": true, "systemd-tmpfiles": true,
	"sa1": true, "sa2": true, "debian-sa1": true,
}

// runWrappers run the command in their arguments ("sudo logrotate ...",
// "nice -n 19 updatedb", "flock -n LOCK certbot renew").
var runWrappers = map[string]bool{
	"sudo": true, "nice": true, "ionice": true, "nohup": true, "env": true, "exec": true,
	"command": true, "timeout": true, "chronic": true, "flock": true, "time": true,
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true,
}

// tmpCleanup names a find that deletes under a temporary folder.
const tmpCleanup = "find /tmp ... -delete"

// shellSep splits a command line into its simple commands, roughly: at
// the operators, subshells, groups and substitutions a crontab line uses.
// Longer operators come first so that "&&" is not read as two "&".
var shellSep = strings.NewReplacer("&&", "\x00", "||", "\x00", "$(", "\x00", ";", "\x00", "|", "\x00",
	"&", "\x00", "(", "\x00", ")", "\x00", "{", "\x00", "}", "\x00", "`", "\x00", "\n", "\x00")

// hostLocal returns the host-local maintenance a command line runs (a
// program of maintenancePrograms, or tmpCleanup), or "". It matches the
// words in a command's place, after assignments and wrappers such as sudo,
// and compares their base names whole: "/usr/sbin/logrotate" matches,
// "logrotate-report.sh" and "test -x /usr/sbin/logrotate" do not.
func hostLocal(cmd string) string {
	for _, part := range strings.Split(shellSep.Replace(cmd), "\x00") {
		words := strings.Fields(part)
		for i, w := range words {
			words[i] = strings.Trim(w, `"'`)
		}
		if p := maintenance(words); p != "" {
			return p
		}
	}
	return ""
}

// maintenance returns what the simple command words runs, if it is
// host-local maintenance.
func maintenance(words []string) string {
	i := 0
	for i < len(words) && isAssignment(words[i]) {
		i++
	}
	if i < len(words) && runWrappers[path.Base(words[i])] {
		// The command is somewhere in the wrapper's arguments, after its
		// options and their values: take the first word that names one.
		for i++; i < len(words); i++ {
			if b := path.Base(words[i]); maintenancePrograms[b] || b == "find" {
				break
			}
		}
	}
	if i >= len(words) {
		return ""
	}
	switch prog := path.Base(words[i]); {
	case maintenancePrograms[prog]:
		return prog
	case prog == "find" && deletesInTmp(words[i+1:]):
		return tmpCleanup
	}
	return ""
}

// deletesInTmp reports whether find's arguments name a temporary folder
// and delete what they find (-delete, or -exec rm).
func deletesInTmp(args []string) bool {
	inTmp, deletes := false, false
	for i, a := range args {
		switch {
		case isTmpPath(a):
			inTmp = true
		case a == "-delete":
			deletes = true
		case (a == "-exec" || a == "-execdir") && i+1 < len(args) && path.Base(args[i+1]) == "rm":
			deletes = true
		}
	}
	return inTmp && deletes
}

// tmpDirs are the host's temporary folders.
var tmpDirs = []string{"/tmp", "/var/tmp"}

func isTmpPath(p string) bool {
	p = path.Clean(p)
	for _, d := range tmpDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// hostLocalNote is the stderr note on a job that runs the host-local
// maintenance what.
func hostLocalNote(what string) string {
	return "host-local maintenance (" + what + "): written with run_on: every_replica, so that each " +
		"replica runs it on its own host at every tick, as cron did on each host with this crontab."
}

// hostLocalComment is the comment above the run_on key of such a job.
func hostLocalComment(what string) string {
	return "host-local maintenance (" + what + "): every replica runs it on its own host, as cron " +
		"did on each host; two replicas on one host both run it. Use run_on: one to run it once per tick."
}
