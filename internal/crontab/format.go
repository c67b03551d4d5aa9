package crontab

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// SystemFormatError is a crontab given as a user's crontab (Options.System
// false) whose entries have a user field between the time fields and the
// command, as /etc/crontab and /etc/cron.d/* do. Read as a user's crontab
// it would give jobs named after the user that run the user name as a
// program.
type SystemFormatError struct {
	Source string
	Line   int    // 1-based: the first entry whose sixth field is User
	User   string // a well-known account name
}

// Error formats e as "SOURCE:LINE: reason (hint: ...)", as LineError.
func (e *SystemFormatError) Error() string {
	return fmt.Sprintf("%s:%d: %q after the time fields is a user name: this is a system crontab "+
		"(/etc/crontab, /etc/cron.d/*), whose sixth field is the user (hint: convert it with --system)",
		e.Source, e.Line, e.User)
}

// wellKnownUsers are account names that mark a sixth field as a user: the
// system accounts /etc/crontab and /etc/cron.d files name, and not the name
// of a program a user's crontab would run. Accounts that are also common
// commands (mail, backup, sync, man, lp, mysql, nginx, git) are left out,
// so that "0 * * * * backup --full" stays a user's entry.
var wellKnownUsers = map[string]bool{
	"root": true, "daemon": true, "bin": true, "sys": true, "adm": true, "nobody": true,
	"operator": true, "www-data": true, "www": true, "_www": true, "apache": true,
	"postgres": true, "ec2-user": true,
}

// userName is what a login name looks like (useradd's default rule, with
// the '$' of Samba machine accounts): no '/', '.', '=' or capital, which a
// command word often has.
var userName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}\$?$`)

// detectSystem returns a *SystemFormatError if text is a system crontab.
//
// The rule, made to never refuse a user's crontab: text is a system
// crontab if at least one entry's sixth field is a well-known account name
// (wellKnownUsers) with a command after it, and no entry reads only as a
// user's crontab, that is every other entry also has, after its time
// fields, a word that looks like a login name (userName) and then a
// command. So "0 * * * * root-task.sh" or "@daily /usr/bin/x" anywhere
// keep the file a user's crontab, and so does a file whose sixth fields
// are all ordinary words ("0 * * * * date +%s"). An entry whose only word
// after the time fields is a well-known account ("0 0 * * * root") is
// broken either way and left out of the decision.
func detectSystem(text []byte, source string) *SystemFormatError {
	var found *SystemFormatError
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, len(text)+1)
	for n := 1; sc.Scan(); n++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' || envLine.MatchString(s) {
			continue
		}
		sixth, cmd, ok := sixthField(s)
		switch {
		case !ok:
			continue // not an entry: reported as such by the conversion
		case wellKnownUsers[sixth] && cmd == "":
			continue
		case !userName.MatchString(sixth) || cmd == "":
			return nil // only a user's crontab reads this entry
		case wellKnownUsers[sixth] && found == nil:
			found = &SystemFormatError{Source: source, Line: n, User: sixth}
		}
	}
	return found
}

// sixthField returns the word after an entry's time fields (or @-spec)
// and the text after that word; ok is false if s has no such word.
func sixthField(s string) (sixth, rest string, ok bool) {
	rest = s
	fields := fieldCount
	if strings.HasPrefix(s, "@") {
		fields = 1
	}
	for range fields {
		var w string
		if w, rest = cutWord(rest); w == "" {
			return "", "", false
		}
	}
	sixth, rest = cutWord(rest)
	return sixth, strings.TrimSpace(rest), sixth != ""
}
