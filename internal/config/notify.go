package config

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// NotifyTarget is one place a job's results are sent to: exactly one of
// Webhook and Command is set.
//
// A webhook receives an HTTP POST of the JSON payload with Content-Type
// application/json, the configured Headers, and, when Secret is set, the
// header X-Cronlock-Signature: sha256=<hex HMAC-SHA256 of the body keyed
// with Secret>. A command is run (argv, no shell) with the payload on its
// standard input.
type NotifyTarget struct {
	// Webhook is an absolute http or https URL with a host. It is a Secret
	// because webhook URLs commonly embed their credential (as Slack's do):
	// it is redacted in dumps of the Config, and errors and logs name at most
	// its scheme and host.
	Webhook Secret `yaml:"webhook"`
	// Headers are extra request headers of a webhook; the values may be
	// credentials and are redacted when printed. Names are HTTP tokens and
	// not one cronlock sets itself (Content-Type, Content-Length, Host,
	// X-Cronlock-Signature). Nil when absent.
	Headers map[string]Secret `yaml:"headers"`
	// Secret, when set (non-empty), is the HMAC-SHA256 key of a webhook's
	// X-Cronlock-Signature header.
	Secret Secret `yaml:"secret"`
	// SecretFile and HeadersFile name files holding Secret and Headers (the
	// *_file convention, see secretfile.go); HeadersFile holds one
	// "Name: value" line per header. Default "".
	SecretFile  string `yaml:"secret_file"`
	HeadersFile string `yaml:"headers_file"`
	// Command is a non-empty argv, Command[0] non-empty, run without a shell.
	Command []string `yaml:"command"`
	// Dir is a command's working directory; relative to the configuration
	// file's folder. Default "": cronlock's working directory.
	Dir string `yaml:"dir"`
	// On lists the events that fire the target, each one of NotifyFailure,
	// NotifyMissed, NotifyRecovered, NotifySuccess, NotifyAnomaly and
	// NotifySuspended,
	// without repeats.
	// Default DefaultNotifyOn; an explicitly empty list is an error.
	On []string `yaml:"on"`

	// Line is the 1-based line of the target's entry in the file.
	Line int `yaml:"-"`
}

// Events a NotifyTarget can subscribe to with its on key.
const (
	// NotifyFailure fires for a run that failed, timed out, lost its lock or
	// was abandoned by its replica.
	NotifyFailure = "failure"
	// NotifyMissed fires for ticks that no replica ran.
	NotifyMissed = "missed"
	// NotifyRecovered fires for the first success after a run that did not
	// succeed.
	NotifyRecovered = "recovered"
	// NotifySuccess fires for every successful run.
	NotifySuccess = "success"
	// NotifyAnomaly fires once for each shared record of the job that a
	// replica found untrustworthy and repaired (a last claimed tick beyond
	// the server's time, a corrupt record).
	NotifyAnomaly = "anomaly"
	// NotifySuspended fires once for the failed run after which
	// suspend_after_failures suspended the job; a target subscribed to it
	// gets it instead of that run's failure.
	NotifySuspended = "suspended"
)

// NotifyEvents lists every valid event, in documentation order.
var NotifyEvents = []string{NotifyFailure, NotifyMissed, NotifyRecovered, NotifySuccess, NotifyAnomaly, NotifySuspended}

// DefaultNotifyOn is the on list of a target that does not write one: what
// needs a human's attention, and the all-clear after it.
var DefaultNotifyOn = []string{NotifyFailure, NotifyMissed, NotifyRecovered, NotifyAnomaly, NotifySuspended}

// SignatureHeader is the webhook header that carries the HMAC signature.
const SignatureHeader = "X-Cronlock-Signature"

// reservedHeaders are set by cronlock on every webhook request; a target
// may not override them.
var reservedHeaders = []string{"Content-Type", "Content-Length", "Host", SignatureHeader}

// headerName matches an HTTP header field name (an RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

var (
	notifyTargetsType = reflect.TypeFor[[]NotifyTarget]()
	secretMapType     = reflect.TypeFor[map[string]Secret]()
)

// NotifyTargets returns the notification targets of every job by name: the
// job's own notify list when it has one (possibly empty), else the
// top-level list. Jobs without targets map to an empty or nil slice.
func (c *Config) NotifyTargets() map[string][]NotifyTarget {
	out := make(map[string][]NotifyTarget, len(c.Jobs))
	for _, j := range c.Jobs {
		if j.Notify != nil {
			out[j.Name] = j.Notify
		} else {
			out[j.Name] = c.Notify
		}
	}
	return out
}

// notifyTargets decodes a list of notify targets into v (a []NotifyTarget),
// leaving an empty, non-nil slice for an empty list: for a job that means
// "no notifications", not "inherit".
func (d *decoder) notifyTargets(n ast.Node, path string, v reflect.Value) {
	out, ok := decodeEntries(d, n, path, "a list of notify targets", "empty notify target; expected a mapping with webhook or command",
		func(line int) NotifyTarget { return NotifyTarget{Line: line} },
		func(p string, t *NotifyTarget) {
			if !d.set[p+".on"] {
				t.On = slices.Clone(DefaultNotifyOn)
			}
		})
	if ok {
		v.Set(reflect.ValueOf(out))
	}
}

// validateNotify checks the targets of one notify list at path.
func (d *decoder) validateNotify(path string, targets []NotifyTarget) {
	for i := range targets {
		p := fmt.Sprintf("%s[%d]", path, i)
		if d.isFailed(p) {
			continue
		}
		d.validateTarget(p, &targets[i])
	}
}

func (d *decoder) validateTarget(p string, t *NotifyTarget) {
	at := func(key string) string { return p + "." + key }
	hasHook, hasCmd := d.set[at("webhook")], d.set[at("command")]
	switch {
	case hasHook && hasCmd:
		d.check(true, at("command"), []string{at("webhook")}, "webhook and command are mutually exclusive; set only one")
	case !hasHook && !hasCmd:
		d.check(true, p, nil, "one of webhook or command is required")
	case hasHook:
		if msg := checkWebhookURL(t.Webhook.Value()); msg != "" {
			d.check(true, at("webhook"), nil, "%s", msg)
		}
	case len(t.Command) == 0:
		d.check(true, at("command"), nil, "must not be an empty list")
	case t.Command[0] == "":
		d.check(true, at("command")+"[0]", nil, "the program must not be empty")
	}
	for k, a := range t.Command {
		d.check(strings.IndexByte(a, 0) >= 0, fmt.Sprintf("%s[%d]", at("command"), k), nil, "must not contain a NUL byte")
	}
	d.check(d.set[at("dir")] && !hasCmd, at("dir"), nil, "applies only to command targets")
	d.check(strings.IndexByte(t.Dir, 0) >= 0, at("dir"), nil, "must not contain a NUL byte")
	if hasCmd {
		d.check(d.set[at("headers")], at("headers"), nil, "applies only to webhook targets")
		d.check(d.set[at("secret")], at("secret"), nil, "applies only to webhook targets")
	}
	d.check(d.set[at("secret")] && t.Secret == "", at("secret"), nil,
		"must not be empty; leave the key out to send no signature")
	d.validateHeaders(at("headers"), t.Headers)
	d.validateOn(at("on"), t.On)
}

// checkWebhookURL returns what is wrong with a webhook URL, or "". The
// message never repeats the URL: it may hold a credential.
func checkWebhookURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Sprintf("invalid URL: %v", err)
	}
	switch {
	case u.Scheme == "":
		return `invalid URL: must be absolute, starting with "http://" or "https://"`
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("invalid URL: scheme %s is not supported; use http or https", quote(u.Scheme))
	case u.Hostname() == "":
		return "invalid URL: the host is missing"
	}
	return ""
}

func (d *decoder) validateHeaders(path string, h map[string]Secret) {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		kp := join(path, name)
		canon := http.CanonicalHeaderKey(name)
		switch {
		case !headerName.MatchString(name):
			d.check(true, kp, nil, "invalid header name: use letters, digits and !#$%%&'*+-.^_`|~")
		case slices.Contains(reservedHeaders, canon):
			d.check(true, kp, nil, "%s is set by cronlock and cannot be configured", canon)
		}
		d.check(strings.ContainsAny(h[name].Value(), "\r\n\x00"), kp, nil,
			"header value must not contain a line break or NUL byte")
	}
}

func (d *decoder) validateOn(path string, on []string) {
	d.check(on != nil && len(on) == 0, path, nil,
		"must not be an empty list; leave the key out for the default [%s]", strings.Join(DefaultNotifyOn, ", "))
	seen := map[string]bool{}
	for i, e := range on {
		ep := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case !slices.Contains(NotifyEvents, e):
			d.check(true, ep, nil, "unknown event %s; use %s", quote(e), strings.Join(NotifyEvents, ", "))
		case seen[e]:
			d.check(true, ep, nil, "duplicate event %s", quote(e))
		}
		seen[e] = true
	}
}
