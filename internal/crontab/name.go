package crontab

import (
	"path"
	"strconv"
	"strings"

	"github.com/cronlock/cronlock/job"
)

// maxBaseName bounds a derived name before its "-N" suffix: names should
// be short enough to read in logs and `cronlock status`.
const maxBaseName = 40

// fallbackName is the name of a job whose command yields no usable word.
const fallbackName = "job"

// wrappers are programs whose first argument says more about the job than
// they do: "run-parts /etc/cron.daily" becomes run-parts-cron-daily.
var wrappers = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "env": true,
	"nice": true, "nohup": true, "run-parts": true, "php": true,
	"python": true, "python3": true, "perl": true, "ruby": true, "node": true,
}

// scriptExts are file extensions left out of names: "backup.sh" is "backup".
var scriptExts = []string{".sh", ".bash", ".py", ".pl", ".rb", ".php", ".js"}

// names hands out unique job names derived from commands.
type names struct {
	used map[string]bool
}

func newNames() *names { return &names{used: map[string]bool{}} }

// next returns a valid job name for cmd that was not handed out before:
// the base name of its program (and of the first argument of a wrapper such
// as sh or run-parts), lower case, with characters a name cannot hold
// turned into '-'; then "-2", "-3", ... if taken.
func (n *names) next(cmd string) string {
	base := sanitize(nameWords(cmd))
	name := base
	for i := 2; n.used[name] || job.ValidateName(name) != nil; i++ {
		name = base + "-" + strconv.Itoa(i)
	}
	n.used[name] = true
	return name
}

// guards are programs that only decide whether or where the real command
// runs ("cd /srv && make", "[ -x /usr/bin/x ] && x"): the name comes from
// the command after them.
var guards = map[string]bool{"[": true, "[[": true, "test": true, "cd": true, "true": true, ":": true}

// commandSep splits a command line into its commands, roughly: good enough
// to find a name, not to parse shell.
var commandSep = strings.NewReplacer("&&", "\x00", "||", "\x00", ";", "\x00", "|", "\x00")

// nameWords picks the words of cmd a name is made of: those of the first
// command that is not a guard.
func nameWords(cmd string) string {
	parts := strings.Split(commandSep.Replace(cmd), "\x00")
	for _, p := range parts {
		if f := strings.Fields(p); len(f) > 0 && !guards[f[0]] {
			return programWords(p)
		}
	}
	return programWords(parts[0])
}

// programWords returns the base name of the program of a simple command,
// and of its first argument if the program is a wrapper.
func programWords(cmd string) string {
	var words []string
	for _, w := range strings.Fields(cmd) {
		if len(words) == 0 && isAssignment(w) {
			continue // FOO=bar program ...
		}
		if len(words) > 0 && strings.HasPrefix(w, "-") {
			continue // options of a wrapper
		}
		words = append(words, baseName(w))
		if len(words) == 2 || !wrappers[words[0]] {
			break
		}
	}
	return strings.Join(words, "-")
}

func isAssignment(w string) bool {
	k, _, ok := strings.Cut(w, "=")
	return ok && k != "" && !strings.ContainsAny(k, "/$\"'")
}

func baseName(w string) string {
	b := path.Base(strings.Trim(w, `"'`))
	for _, ext := range scriptExts {
		if s, ok := strings.CutSuffix(b, ext); ok && s != "" {
			return s
		}
	}
	return b
}

// sanitize lower-cases s and keeps letters, digits, '_' and '-', with runs
// of anything else turned into one '-'.
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if len(out) > maxBaseName {
		out = strings.TrimRight(out[:maxBaseName], "-")
	}
	if out == "" {
		return fallbackName
	}
	return out
}
