package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// ParseDefinitions decodes and validates runtime job definitions: data (YAML
// or JSON) is one definition (a mapping with the keys of a file job) or a
// list of them under jobs:, as in a configuration file. They are validated
// as the file's jobs are, against c's kinds, and:
//   - without runtime_jobs.allow_commands, a definition names a kind and
//     sets no command, shell, env, dir or notify command of its own;
//   - names are unique within data (uniqueness against the file's jobs
//     and the bucket is the caller's: it knows both).
//
// Errors are *FieldError joined as Parse's; a single definition's fields
// are named as written ("schedule"), a list's as "jobs[2].schedule".
func (c *Config) ParseDefinitions(filename string, data []byte) ([]Definition, error) {
	return c.parseDefinitions(filename, data, true)
}

// DecodeDefinition is ParseDefinitions for data that must be one
// definition, without its JSON text (the caller has it: a stored value):
// what each replica does for each definition it follows, 100,000 of them
// at a start-up, where writing the JSON again was a third of the cost.
func (c *Config) DecodeDefinition(filename string, data []byte) (Job, error) {
	defs, err := c.parseDefinitions(filename, data, false)
	switch {
	case err != nil:
		return Job{}, err
	case len(defs) != 1:
		return Job{}, &FieldError{File: filename, Line: 1, Msg: "want one job definition, not a jobs: list"}
	}
	return defs[0].Job, nil
}

func (c *Config) parseDefinitions(filename string, data []byte, withJSON bool) ([]Definition, error) {
	d := newDecoder(filename, data)
	d.whole, d.runtime = true, true
	jobs, nodes, single := d.decodeDefinitions()
	if jobs != nil {
		cc := *c
		cc.Jobs = jobs
		names := map[string]int{}
		for i := range cc.Jobs {
			d.restrictRuntime(&cc, i)
			d.validateJob(&cc, i, names)
		}
	}
	if err := d.err(); err != nil {
		if single {
			err = unprefix(err, "jobs[0]")
		}
		return nil, err
	}
	out := make([]Definition, len(jobs))
	for i := range jobs {
		out[i].Job = jobs[i]
		if !withJSON {
			continue
		}
		var v map[string]any
		if err := yaml.NodeToValue(nodes[i], &v); err != nil {
			return nil, &FieldError{File: filename, Line: jobs[i].Line, Msg: err.Error()}
		}
		text, err := json.Marshal(v)
		if err != nil {
			return nil, &FieldError{File: filename, Line: jobs[i].Line, Msg: "cannot be written as JSON: " + err.Error()}
		}
		out[i] = Definition{Job: jobs[i], JSON: text}
	}
	return out, nil
}

// Definition is a runtime job's definition: the job, validated, and its
// text as JSON (a YAML definition converted), which is what is stored.
type Definition struct {
	Job  Job
	JSON []byte
}

// decodeDefinitions parses d's data into jobs, with the node of each;
// single reports that it was one definition rather than a jobs: list. Nil
// jobs: nothing to validate.
func (d *decoder) decodeDefinitions() (jobs []Job, nodes []ast.Node, single bool) {
	file, err := parse(d.file, d.data, nil)
	var limit *FieldError
	switch {
	case errors.As(err, &limit):
		d.errs = append(d.errs, limit)
		return nil, nil, false
	case err != nil:
		d.syntaxError(err)
		return nil, nil, false
	}
	var body ast.Node
	for _, doc := range file.Docs {
		if doc == nil || isNull(doc.Body) {
			continue
		}
		if body != nil {
			d.problem(line(doc.Body), "", "more than one YAML document (---); write one definition, or a jobs: list")
			return nil, nil, false
		}
		body = doc.Body
	}
	m, ok := body.(*ast.MappingNode)
	if !ok {
		d.problem(line(body), "", "want a job definition (a mapping with name and schedule) or a jobs: list, got %s", kind(body))
		return nil, nil, false
	}
	if hasKey(m, "jobs") {
		var list struct {
			Jobs []Job `yaml:"jobs"`
		}
		d.value(m, "", reflect.ValueOf(&list).Elem())
		if len(list.Jobs) == 0 && !d.isFailed("jobs") {
			d.problem(line(m), "jobs", "the list is empty")
		}
		if seq, ok := valueOf(m, "jobs").(*ast.SequenceNode); ok && len(seq.Values) == len(list.Jobs) {
			nodes = seq.Values
		}
		return list.Jobs, nodes, false
	}
	j := Job{Grace: DefaultJobGrace, Line: line(m)}
	d.lines["jobs[0]"] = j.Line
	d.value(m, "jobs[0]", reflect.ValueOf(&j).Elem())
	return []Job{j}, []ast.Node{m}, true
}

// valueOf is the value of the plain key name in m, or nil.
func valueOf(m *ast.MappingNode, name string) ast.Node {
	for _, kv := range m.Values {
		if k, ok := kv.Key.(*ast.StringNode); ok && k.Value == name {
			return kv.Value
		}
	}
	return nil
}

// hasKey reports whether the mapping m has the plain key name.
func hasKey(m *ast.MappingNode, name string) bool { return valueOf(m, name) != nil }

// restrictRuntime refuses, without runtime_jobs.allow_commands, what would
// let a definition run something the operator did not write: its own
// command, shell, env or dir, or a notify command.
func (d *decoder) restrictRuntime(c *Config, i int) {
	if c.RuntimeJobs.AllowCommands {
		return
	}
	p := fmt.Sprintf("jobs[%d]", i)
	const why = "runtime_jobs.allow_commands is false: a runtime job runs a kind of the configuration file (kind: NAME) and passes its payload"
	for _, key := range []string{"command", "shell", "env", "dir"} {
		if d.set[p+"."+key] {
			d.check(true, p+"."+key, nil, "not allowed: %s", why)
			d.failed[p] = true
		}
	}
	for k, t := range c.Jobs[i].Notify {
		if len(t.Command) > 0 {
			d.check(true, fmt.Sprintf("%s.notify[%d].command", p, k), nil, "not allowed: %s", why)
			d.failed[p] = true
		}
	}
	if !d.set[p+".kind"] && !d.isFailed(p) {
		d.check(true, p+".kind", nil, "is required: %s", why)
		d.failed[p] = true
	}
}

// unprefix removes the path prefix of a single definition from the
// errors joined in err.
func unprefix(err error, prefix string) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		if fe, ok := e.(*FieldError); ok {
			c := *fe
			c.Path = strings.TrimPrefix(strings.TrimPrefix(c.Path, prefix), ".")
			e = &c
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}
