package config

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
)

// The *_file convention: every secret key x has a key x_file naming a file
// that holds the value instead, so that the value can live in a Kubernetes
// Secret or a file readable only by cronlock while the configuration itself
// sits in a ConfigMap or in version control:
//
//	http.admin_token       http.admin_token_file
//	http.read_token        http.read_token_file
//	nats.token             nats.token_file
//	nats.password          nats.password_file
//	nats.embedded.auth.token  nats.embedded.auth.token_file
//	notify[].secret        notify[].secret_file    (and jobs[].notify[])
//	notify[].headers       notify[].headers_file   ("Name: value" lines)
//
// A relative x_file is relative to the configuration file's folder, like
// every path key. Setting both x and x_file is an error naming both. The
// file is read when the configuration is loaded, so a reload (SIGHUP, or an
// edit of the configuration file with config_watch) reads it again. One
// trailing line break is trimmed; a file that is then empty, not a regular
// file, or larger than maxSecretFile is an error naming the x_file key. The
// value read is a Secret: it is never printed, and errors about it never
// repeat it.

// maxSecretFile bounds a secret file: far above any token or header list,
// small enough that naming /dev/zero or a log file by mistake costs nothing.
const maxSecretFile = 64 << 10

// secretField is one secret key with its _file key.
type secretField struct {
	key   string  // the value's path, e.g. "http.admin_token"
	value *Secret // where the file's content goes
	file  string  // the _file key's value as written
	// target is the notify target's path for a webhook-only key, else "".
	target string
}

// secretFields lists the single-value secret keys of c that have a _file
// key. Headers files are read by readHeadersFiles.
func (c *Config) secretFields() []secretField {
	out := []secretField{
		{"http.admin_token", &c.HTTP.AdminToken, c.HTTP.AdminTokenFile, ""},
		{"http.read_token", &c.HTTP.ReadToken, c.HTTP.ReadTokenFile, ""},
		{"nats.token", &c.NATS.Token, c.NATS.TokenFile, ""},
		{"nats.password", &c.NATS.Password, c.NATS.PasswordFile, ""},
		{"nats.embedded.auth.token", &c.NATS.Embedded.Auth.Token, c.NATS.Embedded.Auth.TokenFile, ""},
	}
	c.eachNotifyList(func(path string, targets []NotifyTarget) {
		for i := range targets {
			t := &targets[i]
			p := fmt.Sprintf("%s[%d]", path, i)
			out = append(out, secretField{p + ".secret", &t.Secret, t.SecretFile, p})
		}
	})
	return out
}

// eachNotifyList calls fn with the top-level notify list and every job's.
func (c *Config) eachNotifyList(fn func(path string, targets []NotifyTarget)) {
	fn("notify", c.Notify)
	for i := range c.Jobs {
		fn(fmt.Sprintf("jobs[%d].notify", i), c.Jobs[i].Notify)
	}
}

// readSecretFiles fills every secret whose _file key is written from its
// file, before validation checks the values. A value read from a file is
// checked as if it were written at its _file key's line; see fileKey.
func (d *decoder) readSecretFiles(c *Config) {
	dir := configDir(d.file)
	for _, f := range c.secretFields() {
		fk := f.key + "_file"
		if f.file == "" || d.isFailed(fk) {
			continue // "" is not set, like creds_file: ""
		}
		if d.set[f.key] {
			d.check(true, fk, []string{f.key}, "conflicts with %s: set only one of them", f.key)
			continue
		}
		if f.target != "" && d.set[f.target+".command"] {
			d.check(true, fk, nil, "applies only to webhook targets")
			continue
		}
		data, err := readSecretFile(resolvePath(dir, f.file))
		if err != nil {
			d.problem(d.lineOf(fk), fk, "%v", err)
			continue
		}
		*f.value = Secret(trimLineBreak(data))
		if *f.value == "" {
			d.problem(d.lineOf(fk), fk, "the file %s is empty", quote(f.file))
			continue
		}
		if d.fromFile == nil {
			d.fromFile = map[string]bool{}
		}
		d.fromFile[f.key] = true
	}
	c.eachNotifyList(func(path string, targets []NotifyTarget) {
		for i := range targets {
			d.readHeadersFile(dir, fmt.Sprintf("%s[%d]", path, i), &targets[i])
		}
	})
}

// fileKey is the key that set the secret at key: key itself, or key+"_file"
// when the value came from a file. Validation names it in its messages.
func (d *decoder) fileKey(key string) string {
	if d.fromFile[key] || d.isFailed(key+"_file") {
		return key + "_file"
	}
	return key
}

// readSecretFile reads a regular file of at most maxSecretFile bytes.
// Errors name the file but never show its content.
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read the file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", quote(path))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read the file: %w", err)
	}
	if len(data) > maxSecretFile {
		return nil, fmt.Errorf("the file %s is larger than %d bytes", quote(path), maxSecretFile)
	}
	return data, nil
}

// trimLineBreak drops one trailing "\n" or "\r\n", which editors and
// `echo` add and no token contains.
func trimLineBreak(b []byte) string {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return string(bytes.TrimSuffix(b, []byte("\r")))
}

// readHeadersFile fills t.Headers from t.HeadersFile when its key is
// written at p+".headers_file". The file holds one "Name: value" line per
// header, as in an HTTP request; blank lines and lines starting with '#'
// are skipped, and spaces around the value are trimmed. Each problem is
// reported at the headers_file key with the file's line, never its value.
func (d *decoder) readHeadersFile(dir, p string, t *NotifyTarget) {
	key, fk := p+".headers", p+".headers_file"
	if t.HeadersFile == "" || d.isFailed(fk) {
		return
	}
	switch {
	case d.set[key]:
		d.check(true, fk, []string{key}, "conflicts with %s: set only one of them", key)
		return
	case d.set[p+".command"]:
		d.check(true, fk, nil, "applies only to webhook targets")
		return
	}
	data, err := readSecretFile(resolvePath(dir, t.HeadersFile))
	if err != nil {
		d.problem(d.lineOf(fk), fk, "%v", err)
		return
	}
	h, problems := parseHeaders(data)
	for _, msg := range problems {
		d.problem(d.lineOf(fk), fk, "%s: %s", quote(t.HeadersFile), msg)
	}
	if len(problems) == 0 {
		t.Headers = h
	}
}

// parseHeaders reads "Name: value" lines; the problems name the line.
func parseHeaders(data []byte) (map[string]Secret, []string) {
	h := map[string]Secret{}
	seen := map[string]int{}
	var problems []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxSecretFile+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if msg := headerProblem(name, value, ok); msg != "" {
			problems = append(problems, fmt.Sprintf("line %d: %s", n, msg))
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		if first, dup := seen[canon]; dup {
			problems = append(problems, fmt.Sprintf("line %d: header %s repeated (first at line %d)", n, canon, first))
			continue
		}
		seen[canon] = n
		h[name] = Secret(strings.TrimSpace(value))
	}
	if len(h) == 0 && len(problems) == 0 {
		problems = append(problems, "no headers in the file; write one \"Name: value\" line per header")
	}
	return h, problems
}

// headerProblem is what is wrong with one header line of a headers file
// (the rules of notify[].headers), or "". It never repeats the value.
func headerProblem(name, value string, hasColon bool) string {
	switch {
	case !hasColon:
		return "want \"Name: value\""
	case !headerName.MatchString(name):
		return "invalid header name: use letters, digits and !#$%&'*+-.^_`|~ with no space before the ':'"
	case slices.Contains(reservedHeaders, http.CanonicalHeaderKey(name)):
		return http.CanonicalHeaderKey(name) + " is set by cronlock and cannot be configured"
	case strings.ContainsAny(value, "\x00"):
		return "header value must not contain a NUL byte"
	case strings.TrimSpace(value) == "":
		return "header value is empty"
	}
	return ""
}
