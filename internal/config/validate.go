package config

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cronlock/cronlock/job"
)

// bucketName is what NATS accepts as a KV bucket name.
var bucketName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// History.Size bounds: NATS KV keeps at most 64 revisions per key.
const (
	minHistorySize = 1
	maxHistorySize = 64
	// maxOutputTail keeps a run's output well under NATS' default 1 MiB
	// message limit.
	maxOutputTail = 256 << 10
	maxReplicas   = 5
)

// isFailed reports whether path or one of its ancestors already has an error.
func (d *decoder) isFailed(path string) bool {
	for p := path; p != ""; p = parent(p) {
		if d.failed[p] {
			return true
		}
	}
	return d.failed[""]
}

// lineOf returns the line of the first of paths written in the file; when
// none is, the line of the nearest written ancestor of paths[0]; else 1.
func (d *decoder) lineOf(paths ...string) int {
	for _, p := range paths {
		if l, ok := d.lines[p]; ok && l > 0 {
			return l
		}
	}
	for p := parent(paths[0]); p != ""; p = parent(p) {
		if l, ok := d.lines[p]; ok && l > 0 {
			return l
		}
	}
	return 1
}

// check records a problem for path unless path (or an ancestor) already has
// one. The line is that of the first written of path and also.
func (d *decoder) check(bad bool, path string, also []string, format string, args ...any) {
	if !bad || d.isFailed(path) {
		return
	}
	for _, a := range also {
		if d.isFailed(a) {
			return
		}
	}
	d.problem(d.lineOf(append([]string{path}, also...)...), path, format, args...)
}

// validate checks the rules that involve values rather than YAML types, and
// resolves job time zones.
func (d *decoder) validate(c *Config) {
	d.validateDeployment(c)
	d.validateNATS(&c.NATS)
	d.validateEmbeddedAuth(&c.NATS)
	d.validateLock(&c.Lock)
	d.validateCluster(c)

	h := &c.History
	d.checkBucket("history.bucket", h.Bucket)
	d.check(h.Bucket == c.Lock.Bucket, "history.bucket", []string{"lock.bucket"},
		"must differ from lock.bucket (both are %s)", quote(h.Bucket))
	d.validateReplicas(c)
	d.checkLabels("replica.labels", c.Replica.Labels)
	d.check(h.Size < minHistorySize || h.Size > maxHistorySize, "history.size", nil,
		"must be between %d and %d (NATS KV keeps at most %d revisions per key), got %d",
		minHistorySize, maxHistorySize, maxHistorySize, h.Size)

	d.check(h.OutputTail < 0 || h.OutputTail > maxOutputTail, "history.output_tail", nil,
		"must be between 0 (keep no output) and %d bytes, got %d", maxOutputTail, h.OutputTail)
	d.check(c.MaxConcurrentRuns < 0, "max_concurrent_runs", nil, "must not be negative (0: no limit), got %d", c.MaxConcurrentRuns)
	d.validateBounds(c)
	d.validateLibrary(c)
	d.validateGroups(c)

	if c.HTTP.Listen != "" {
		d.checkListen("http.listen", c.HTTP.Listen)
	}
	d.validateAdminToken(c.HTTP)
	d.validateHTTPTransport(c.HTTP)

	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		d.check(true, "log.level", nil, "unknown level %s; use debug, info, warn or error", quote(c.Log.Level))
	}
	switch c.Log.Format {
	case "json", "console":
	default:
		d.check(true, "log.format", nil, "unknown format %s; use json or console", quote(c.Log.Format))
	}
	d.validateLogBudget(c.Log)

	d.validateNotify("notify", c.Notify)

	d.validateKinds(c)
	d.check(len(c.Jobs) == 0 && !c.RuntimeJobs.Enabled, "jobs", nil,
		"at least one job is required (or runtime_jobs: {enabled: true} for jobs defined at run time)")
	names := map[string]int{} // job name -> index of its first job
	for i := range c.Jobs {
		d.validateJob(c, i, names)
	}
}

func (d *decoder) validateNATS(n *NATS) {
	d.check(n.URL == "" && n.Embedded.StoreDir == "", "nats.embedded.store_dir", []string{"nats.url"},
		"must not be empty when nats.url is empty (the embedded server stores JetStream data there)")
	if n.Embedded.Listen != "" {
		d.checkListen("nats.embedded.listen", n.Embedded.Listen)
	}

	// One authentication method at most.
	methods := []struct {
		path string
		set  bool
	}{
		{"nats.creds_file", n.CredsFile != ""},
		{"nats.nkey_file", n.NKeyFile != ""},
		{"nats.token", n.Token != ""},
		{"nats.user", n.User != "" || n.Password != ""},
	}
	first := ""
	for _, m := range methods {
		if !m.set {
			continue
		}
		if first == "" {
			first = m.path
			continue
		}
		path := m.path
		if path == "nats.user" && n.User == "" {
			path = "nats.password"
		}
		d.check(true, path, []string{first},
			"conflicts with %s: set only one of creds_file, nkey_file, token or user and password", first)
	}
	d.check(n.User != "" && n.Password == "", "nats.password", []string{"nats.user"}, "is required when nats.user is set")
	d.check(n.User == "" && n.Password != "", "nats.user", []string{"nats.password"}, "is required when nats.password is set")
	d.check(n.TLS.CertFile != "" && n.TLS.KeyFile == "", "nats.tls.key_file", []string{"nats.tls.cert_file"},
		"is required when nats.tls.cert_file is set")
	d.check(n.TLS.CertFile == "" && n.TLS.KeyFile != "", "nats.tls.cert_file", []string{"nats.tls.key_file"},
		"is required when nats.tls.key_file is set")
	d.validateNATSRouting(n)
}

// subjectPrefix is a NATS subject without wildcards: tokens of letters,
// digits, '_', '-' and '$' separated by single dots.
var subjectPrefix = regexp.MustCompile(`^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$`)

// validateNATSRouting checks the settings that route the client's subjects
// and TLS: inbox_prefix, jetstream.domain and api_prefix, tls.server_name.
func (d *decoder) validateNATSRouting(n *NATS) {
	d.check(n.InboxPrefix != "" && !subjectPrefix.MatchString(n.InboxPrefix), "nats.inbox_prefix", nil,
		"invalid subject prefix %s: use tokens of letters, digits, '_', '-' and '$' separated by '.', "+
			"without wildcards or a trailing '.' (e.g. \"_INBOX_cronlock\")", quote(n.InboxPrefix))
	js := n.JetStream
	d.check(js.Domain != "" && !bucketName.MatchString(js.Domain), "nats.jetstream.domain", nil,
		"invalid domain %s: use letters, digits, '_' and '-'", quote(js.Domain))
	d.check(js.APIPrefix != "" && !subjectPrefix.MatchString(js.APIPrefix), "nats.jetstream.api_prefix", nil,
		"invalid subject prefix %s: use tokens separated by '.', without wildcards or a trailing '.' (e.g. \"$JS.hub.API\")",
		quote(js.APIPrefix))
	d.check(js.Domain != "" && js.APIPrefix != "", "nats.jetstream.api_prefix", []string{"nats.jetstream.domain"},
		"conflicts with nats.jetstream.domain: set only one (a domain is the API prefix \"$JS.<domain>.API\")")
	for _, k := range []struct{ path, v string }{{"nats.jetstream.domain", js.Domain}, {"nats.jetstream.api_prefix", js.APIPrefix}} {
		d.check(k.v != "" && n.URL == "", k.path, nil,
			"requires nats.url: the embedded server is its own JetStream, reached without a domain or prefix")
	}
	d.check(n.TLS.ServerName != "" && strings.ContainsAny(n.TLS.ServerName, " \t/:@"), "nats.tls.server_name", nil,
		"invalid server name %s: write the host name of the server's certificate, without scheme or port",
		quote(n.TLS.ServerName))
}

func (d *decoder) validateLock(l *Lock) {
	d.checkBucket("lock.bucket", l.Bucket)
	lease := l.Lease.Duration()
	d.check(lease < time.Second, "lock.lease", nil, "must be at least 1s, got %s", lease)
	d.check(lease >= time.Second && lease%time.Second != 0, "lock.lease", nil,
		"must be a whole number of seconds (NATS KV TTLs have one-second resolution), got %s", lease)
	d.check(l.Renew == 0, "lock.renew", nil, "must be greater than 0")
	d.check(l.Renew != 0 && l.Renew >= l.Lease, "lock.renew", []string{"lock.lease"},
		"must be less than lock.lease (renew %s, lease %s)", l.Renew, l.Lease)
	d.check(l.RetryBase == 0, "lock.retry_base", nil, "must be greater than 0")
	d.check(l.RetryMax == 0, "lock.retry_max", nil, "must be greater than 0")
	d.check(l.RetryBase > l.RetryMax && l.RetryMax != 0, "lock.retry_base", []string{"lock.retry_max"},
		"must not exceed lock.retry_max (retry_base %s, retry_max %s)", l.RetryBase, l.RetryMax)
	d.check(l.AcquireTimeout == 0, "lock.acquire_timeout", nil, "must be greater than 0")
	d.check(l.Replicas < 1 || l.Replicas > maxReplicas, "lock.replicas", nil,
		"must be between 1 and %d, got %d", maxReplicas, l.Replicas)
}

func (d *decoder) validateJob(c *Config, i int, names map[string]int) {
	j := &c.Jobs[i]
	p := fmt.Sprintf("jobs[%d]", i)
	if d.isFailed(p) {
		return
	}
	at := func(key string) string { return p + "." + key }

	// Name: required, valid, unique.
	switch {
	case !d.set[at("name")]:
		d.check(true, at("name"), nil, "is required")
	default:
		if err := job.ValidateName(j.Name); err != nil {
			d.check(true, at("name"), nil, "%v", err)
		} else if first, dup := names[j.Name]; dup {
			d.check(true, at("name"), nil, "duplicate job name %s (first used by jobs[%d] at line %d)",
				quote(j.Name), first, c.Jobs[first].Line)
		} else {
			names[j.Name] = i
		}
	}

	// Time zone, then the schedule in it.
	j.Location = time.UTC
	if j.Timezone != "" {
		loc, err := d.zone(j.Timezone)
		if err != nil {
			j.Location = nil
			d.check(true, at("timezone"), nil, "unknown time zone %s; use an IANA name such as \"Europe/Berlin\", or \"UTC\"",
				quote(j.Timezone))
		} else {
			j.Location = loc
		}
	}
	sched := d.validateSchedule(j, p)

	d.applyKind(c, j, p)
	if d.isFailed(p) {
		return
	}
	d.validateCommand(j, p)
	d.check(j.Retries < 0, at("retries"), nil, "must not be negative, got %d", j.Retries)
	d.check(j.SuspendAfterFailures < 0, at("suspend_after_failures"), nil, "must not be negative, got %d", j.SuspendAfterFailures)
	d.validateOverlap(j, at)
	d.validateJobGroup(c, j, at)
	d.validatePlacement(j, at)
	d.validateJobBounds(j, p, sched)
	switch j.OnInterrupt {
	case "", "skip", "rerun":
	default:
		d.check(true, at("on_interrupt"), nil, "unknown policy %s; use skip or rerun", quote(j.OnInterrupt))
	}
	d.validateNotify(at("notify"), j.Notify)
}

// validateCommand checks what a job runs: exactly one of command and
// shell, and no NUL byte in it, its directory or its environment.
func (d *decoder) validateCommand(j *Job, p string) {
	at := func(key string) string { return p + "." + key }
	hasCmd, hasShell := d.set[at("command")], d.set[at("shell")]
	switch {
	case hasCmd && hasShell:
		d.check(true, at("shell"), []string{at("command")}, "command and shell are mutually exclusive; set only one")
	case !hasCmd && !hasShell:
		d.check(true, p, nil, "one of command or shell is required")
	case hasCmd && len(j.Command) == 0:
		d.check(true, at("command"), nil, "must not be an empty list")
	case hasCmd && j.Command[0] == "":
		d.check(true, at("command")+"[0]", nil, "the program must not be empty")
	case hasShell && strings.TrimSpace(j.Shell) == "":
		d.check(true, at("shell"), nil, "must not be empty")
	}
	for k, a := range j.Command {
		d.check(strings.IndexByte(a, 0) >= 0, fmt.Sprintf("%s[%d]", at("command"), k), nil, "must not contain a NUL byte")
	}
	d.check(strings.IndexByte(j.Shell, 0) >= 0, at("shell"), nil, "must not contain a NUL byte")
	d.check(strings.IndexByte(j.Dir, 0) >= 0, at("dir"), nil, "must not contain a NUL byte")
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		kp, v := join(at("env"), k), j.Env[k]
		d.check(k == "" || strings.ContainsAny(k, "=\x00"), kp, nil,
			"invalid environment variable name: must be non-empty and contain no '=' or NUL")
		d.check(strings.IndexByte(v, 0) >= 0, kp, nil, "must not contain a NUL byte")
	}
}

func (d *decoder) checkBucket(path, name string) {
	d.check(!bucketName.MatchString(name), path, nil,
		"invalid bucket name %s: use letters, digits, '_' and '-'", quote(name))
}

// checkListen validates a host:port listen address (host may be empty).
func (d *decoder) checkListen(path, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	d.check(err != nil, path, nil, "invalid listen address %s: want host:port such as \"127.0.0.1:8736\" or \":8736\"",
		quote(addr))
}

// validateAdminToken checks http.admin_token and http.read_token when they
// are written (directly or through their _file key). Messages never repeat
// a token.
func (d *decoder) validateAdminToken(h HTTP) {
	for _, t := range []struct {
		key  string
		tok  Secret
		hint string
	}{
		{"http.admin_token", h.AdminToken, "for a read-only status page"},
		{"http.read_token", h.ReadToken, "for an open status page"},
	} {
		path := d.fileKey(t.key)
		if !d.set[path] || d.isFailed(path) {
			continue
		}
		if msg := tokenProblem(t.tok.Value(), t.hint); msg != "" {
			d.check(true, path, nil, "%s", msg)
			continue
		}
		d.check(h.Listen == "", path, []string{"http.listen"}, "has no effect: http.listen is empty, so there is no HTTP server")
	}
}

// tokenProblem is what makes tok a weak secret (empty, not visible ASCII,
// short, a placeholder), or "". hint ends the message for an empty one.
func tokenProblem(tok, hint string) string {
	visible := strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r > '~' }) < 0
	switch {
	case tok == "":
		return "must not be empty; leave the key out " + hint
	case !visible:
		return "must be visible ASCII characters without spaces (it is sent in an HTTP header)"
	case len(tok) < MinAdminTokenLength:
		return fmt.Sprintf("too short: use at least %d characters (make one with `%s`)", MinAdminTokenLength, AdminTokenCommand)
	case placeholderToken(tok):
		return fmt.Sprintf("is a placeholder, not a secret: anyone who read the example could use it; "+
			"make a token with `%s`, or leave the key out %s", AdminTokenCommand, hint)
	}
	return ""
}

// AdminTokenCommand makes a good http.admin_token; the errors about a weak
// one and config.example.yaml name it.
const AdminTokenCommand = "openssl rand -hex 32"

// placeholderWords are what example and template tokens are made of; a
// random token (hex, base64) does not spell them. Compared with the token
// lowercased and cut down to its letters and digits.
var placeholderWords = []string{
	"replacewith", "replaceme", "changeme", "changethis", "yourtoken", "youradmin", "yoursecret",
	"putyour", "insertyour", "placeholder", "example", "notasecret", "password", "fixme", "xxxxxx",
}

// minTokenSymbols: a token of fewer distinct characters is a pattern
// ("0000000000000000", "abababab..."), not a random string: 16 random hex
// characters have fewer than 5 distinct ones about once in 2.5 million.
const minTokenSymbols = 5

// placeholderToken reports whether tok is an example value rather than a
// secret: the value config.example.yaml once shipped, one spelling a
// placeholder word (changeme, CHANGE_ME, your-token-here, secret-token,
// ...), or a pattern of few distinct characters.
func placeholderToken(tok string) bool {
	var b strings.Builder
	symbols := map[rune]bool{}
	for _, r := range strings.ToLower(tok) {
		symbols[r] = true
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if len(symbols) < minTokenSymbols {
		return true
	}
	norm := b.String()
	for _, w := range placeholderWords {
		if strings.Contains(norm, w) {
			return true
		}
	}
	return strings.Trim(norm, "secrtoknadmi") == "" // only "secret", "token", "admin" repeated or mixed
}

// validateOverlap checks the job's overlap and max_parallel keys.
func (d *decoder) validateOverlap(j *Job, at func(string) string) {
	_, err := job.ParseOverlap(j.Overlap)
	d.check(err != nil, at("overlap"), nil, "%v", err)
	switch {
	case !d.set[at("max_parallel")]:
	case j.MaxParallel < 1 || j.MaxParallel > job.MaxMaxParallel:
		d.check(true, at("max_parallel"), nil, "must be between 1 and %d, got %d", job.MaxMaxParallel, j.MaxParallel)
	case j.MaxParallel > 1 && j.Overlap != "allow":
		d.check(true, at("max_parallel"), nil, "%d runs at once need overlap: allow", j.MaxParallel)
	}
}
