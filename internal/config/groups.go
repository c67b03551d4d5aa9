package config

import (
	"reflect"
	"sort"

	"github.com/goccy/go-yaml/ast"

	"github.com/cronlock/cronlock/job"
)

// Group is a cluster-wide concurrency group (groups: NAME: {...}): at most
// MaxRunning runs of the jobs naming it (group: NAME) at once across all
// replicas.
type Group struct {
	// MaxRunning is required, at least 1 and at most MaxGroupRunning.
	MaxRunning int `yaml:"max_running"`

	// Line is the 1-based line of the group's key in the file.
	Line int `yaml:"-"`
}

// MaxGroupRunning bounds groups.*.max_running: each slot is a lease that a
// waiting tick may look at.
const MaxGroupRunning = 1000

var groupsType = reflect.TypeFor[map[string]Group]()

// groups decodes the mapping of groups into v (a map[string]Group).
func (d *decoder) groups(n ast.Node, path string, v reflect.Value) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.typeError(n, path, "a mapping of group names to {max_running: N}")
		return
	}
	out := map[string]Group{}
	d.entries(m, path, func(name, child string, keyLine int, val ast.Node) {
		d.lines[child] = keyLine
		g := Group{Line: keyLine}
		if isNull(val) {
			d.problem(keyLine, child, "empty group; expected {max_running: N}")
		} else {
			d.set[child] = true
			d.value(val, child, reflect.ValueOf(&g).Elem())
		}
		out[name] = g
	})
	v.Set(reflect.ValueOf(out))
}

// validateGroups checks each group's name and max_running.
func (d *decoder) validateGroups(c *Config) {
	names := make([]string, 0, len(c.Groups))
	for name := range c.Groups {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g := c.Groups[name]
		p := join("groups", name)
		if err := (job.Job{Group: job.Group{Name: name, MaxRunning: 1}}).GroupError(); err != nil {
			d.check(true, p, nil, "%v", err)
			continue
		}
		d.check(!d.set[p+".max_running"], p+".max_running", nil, "is required (at least 1)")
		d.check(d.set[p+".max_running"] && (g.MaxRunning < 1 || g.MaxRunning > MaxGroupRunning), p+".max_running", nil,
			"must be between 1 and %d, got %d", MaxGroupRunning, g.MaxRunning)
	}
}

// validateJobGroup resolves the job's group key against groups.
func (d *decoder) validateJobGroup(c *Config, j *Job, at func(string) string) {
	if j.Group == "" {
		return
	}
	g, ok := c.Groups[j.Group]
	if !ok {
		d.check(true, at("group"), nil, "unknown group %s; define it under groups: with max_running", quote(j.Group))
		return
	}
	j.GroupMaxRunning = g.MaxRunning
}
