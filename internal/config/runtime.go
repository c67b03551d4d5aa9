package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/cronlock/cronlock/job"
)

// RuntimeJobs configures jobs defined at run time: definitions that live
// in a KV bucket shared by every replica (put and deleted through the API,
// the CLI or a Go worker) and are scheduled beside the file's jobs.
type RuntimeJobs struct {
	// Enabled turns runtime jobs on. Default false: the API answers 404
	// and `cronlock jobs` says how to enable them.
	Enabled bool `yaml:"enabled"`
	// Bucket is the KV bucket of the definitions ([A-Za-z0-9_-]+). Absent
	// or "": "cronlock_jobs", or "cronlock_<deployment>_jobs".
	Bucket string `yaml:"bucket"`
	// AllowCommands lets a runtime job carry its own command, shell, env
	// and dir. Default false: a runtime job names a kind of the file, so
	// a holder of the admin token can schedule only what the operator
	// wrote here.
	AllowCommands bool `yaml:"allow_commands"`
	// MaxJobs bounds how many runtime jobs the bucket holds; a put of one
	// more is refused. Default DefaultMaxRuntimeJobs; >= 1.
	MaxJobs int `yaml:"max_jobs"`
}

// DefaultMaxRuntimeJobs is runtime_jobs.max_jobs when absent.
const DefaultMaxRuntimeJobs = 1_000_000

// MaxPayload is the largest payload, in bytes of its JSON text.
const MaxPayload = 64 << 10

// Kind is a named command that jobs run by naming it (kind: NAME), with
// the keys of a file job's command: a runtime job passes only its payload.
type Kind struct {
	Name    string            `yaml:"name"`
	Command []string          `yaml:"command"`
	Shell   string            `yaml:"shell"`
	Env     map[string]string `yaml:"env"`
	// Dir is relative to the configuration file's folder.
	Dir string `yaml:"dir"`
	// Timeout and Grace are the defaults of the jobs of the kind that set
	// none of their own.
	Timeout Duration `yaml:"timeout"`
	Grace   Duration `yaml:"grace"`
	// Line is the 1-based line of the kind's entry in the file.
	Line int `yaml:"-"`
}

// Payload is a job's payload: the text of a JSON object (at most
// MaxPayload bytes), which its runs receive as CRONLOCK_PAYLOAD. YAML
// mappings are converted to JSON. Nil when absent.
type Payload []byte

var (
	kindsType   = reflect.TypeFor[[]Kind]()
	payloadType = reflect.TypeFor[Payload]()
)

// kinds decodes the list of kinds into v (a []Kind).
func (d *decoder) kinds(n ast.Node, path string, v reflect.Value) {
	out, ok := decodeEntries(d, n, path, "a list of kinds", "empty kind; expected a mapping with name and command or shell",
		func(line int) Kind { return Kind{Line: line} }, nil)
	if ok {
		v.Set(reflect.ValueOf(out))
	}
}

// decodeEntries decodes the list n at path into a []T, each entry
// starting as start(its line) and finished by done (nil: nothing) with its
// path. what names the list for a type error, empty the error of a null
// entry. It reports false when n is not a list.
func decodeEntries[T any](d *decoder, n ast.Node, path, what, empty string, start func(line int) T, done func(p string, t *T)) ([]T, bool) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.typeError(n, path, what)
		return nil, false
	}
	out := make([]T, 0, len(seq.Values))
	for i, el := range seq.Values {
		p := fmt.Sprintf("%s[%d]", path, i)
		line := entryLine(seq, i)
		t := start(line)
		d.lines[p] = line
		if isNull(el) {
			d.problem(line, p, "%s", empty)
		} else {
			d.value(el, p, reflect.ValueOf(&t).Elem())
		}
		if done != nil {
			done(p, &t)
		}
		out = append(out, t)
	}
	return out, true
}

// payload decodes a mapping (YAML or JSON) into v (a Payload) as JSON.
func (d *decoder) payload(n ast.Node, path string, v reflect.Value) {
	if _, ok := n.(*ast.MappingNode); !ok {
		d.typeError(n, path, "a mapping (a JSON object)")
		return
	}
	var obj map[string]any
	if err := yaml.NodeToValue(n, &obj); err != nil {
		d.problem(line(n), path, "cannot read the payload: %v", err)
		return
	}
	data, err := json.Marshal(obj)
	if err != nil {
		d.problem(line(n), path, "cannot be written as JSON: %v", err)
		return
	}
	if len(data) > MaxPayload {
		d.problem(line(n), path, "is %d bytes of JSON, more than the limit of %d (64 KiB)", len(data), MaxPayload)
		return
	}
	v.SetBytes(data)
}

// validateKinds checks the kinds: unique valid names, a command or a shell.
func (d *decoder) validateKinds(c *Config) {
	names := map[string]int{}
	for i := range c.Kinds {
		k := &c.Kinds[i]
		p := fmt.Sprintf("kinds[%d]", i)
		if d.isFailed(p) {
			continue
		}
		switch {
		case !d.set[p+".name"]:
			d.check(true, p+".name", nil, "is required")
		case job.ValidateName(k.Name) != nil:
			d.check(true, p+".name", nil, "%v", job.ValidateName(k.Name))
		default:
			if first, dup := names[k.Name]; dup {
				d.check(true, p+".name", nil, "duplicate kind name %s (first used by kinds[%d] at line %d)",
					quote(k.Name), first, c.Kinds[first].Line)
			}
			names[k.Name] = i
		}
		j := Job{Command: k.Command, Shell: k.Shell, Env: k.Env, Dir: k.Dir}
		d.validateCommand(&j, p)
		d.check(k.Timeout < 0, p+".timeout", nil, "must not be negative, got %s", k.Timeout)
		d.check(k.Grace < 0, p+".grace", nil, "must not be negative, got %s", k.Grace)
	}
	rt := &c.RuntimeJobs
	if rt.Bucket != "" {
		d.checkBucket("runtime_jobs.bucket", rt.Bucket)
	}
	d.check(rt.MaxJobs < 1, "runtime_jobs.max_jobs", nil, "must be at least 1, got %d", rt.MaxJobs)
}

// Kind returns the kind named name, or nil.
func (c *Config) Kind(name string) *Kind {
	for i := range c.Kinds {
		if c.Kinds[i].Name == name {
			return &c.Kinds[i]
		}
	}
	return nil
}

// applyKind makes the job at p run its kind: the kind's command, shell,
// env and dir, and its timeout and grace unless the job sets its own. A
// job with a kind has no command or shell of its own.
func (d *decoder) applyKind(c *Config, j *Job, p string) {
	at := func(key string) string { return p + "." + key }
	if !d.set[at("kind")] {
		return
	}
	k := c.Kind(j.Kind)
	if k == nil {
		names := make([]string, 0, len(c.Kinds))
		for _, k := range c.Kinds {
			names = append(names, k.Name)
		}
		d.check(true, at("kind"), nil, "unknown kind %s; the configuration file defines %s", quote(j.Kind), kindList(names))
		d.failed[p] = true
		return
	}
	for _, key := range []string{"command", "shell"} {
		if d.set[at(key)] {
			d.check(true, at(key), []string{at("kind")}, "kind and %s are mutually exclusive: the kind says what the job runs", key)
			d.failed[p] = true
			return
		}
	}
	j.Command, j.Shell, j.Dir = k.Command, k.Shell, k.Dir
	if len(k.Env) > 0 {
		env := make(map[string]string, len(k.Env)+len(j.Env))
		for name, v := range k.Env {
			env[name] = v
		}
		for name, v := range j.Env { // the job's own env, where it may have one
			env[name] = v
		}
		j.Env = env
	}
	if !d.set[at("timeout")] {
		j.Timeout = k.Timeout
	}
	if !d.set[at("grace")] && k.Grace != 0 {
		j.Grace = k.Grace
	}
	if k.Command != nil {
		d.set[at("command")] = true
	} else {
		d.set[at("shell")] = true
	}
}

func kindList(names []string) string {
	if len(names) == 0 {
		return "no kinds (add a kinds: list)"
	}
	return "the kinds " + strings.Join(names, ", ")
}
