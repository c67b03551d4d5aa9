package job

import (
	"fmt"
	"slices"
	"strings"
)

// RunOn says how many replicas run each tick of a job (Job.RunOn).
type RunOn int

const (
	// RunOnOne (the default): each tick runs once, on one replica.
	RunOnOne RunOn = iota
	// RunOnEveryReplica: each live replica (matching Job.OnReplicas) runs
	// each tick itself, for host-local work such as logrotate. Each
	// replica's runs of the job hold a lock of their own, so a tick runs
	// once per replica and a replica's runs of the job never overlap.
	RunOnEveryReplica
)

// runOnNames are the settings' names, as the configuration spells them.
var runOnNames = [...]string{RunOnOne: "one", RunOnEveryReplica: "every_replica"}

func (r RunOn) String() string {
	if r >= 0 && int(r) < len(runOnNames) {
		return runOnNames[r]
	}
	return fmt.Sprintf("RunOn(%d)", int(r))
}

// ParseRunOn returns the setting called name ("" is one).
func ParseRunOn(name string) (RunOn, error) {
	if name == "" {
		return RunOnOne, nil
	}
	for r, n := range runOnNames {
		if n == name {
			return RunOn(r), nil
		}
	}
	return 0, fmt.Errorf("unknown run_on %q; use one or every_replica", name)
}

// MaxLabels bounds the labels of a replica and the pairs of a job's
// OnReplicas; MaxLabelLen bounds each key and value.
const (
	MaxLabels   = 32
	MaxLabelLen = 63
)

// labelRule is appended to every label error.
const labelRule = "a label key or value is 1 to 63 characters of A-Z, a-z, 0-9, '_', '-' and '.'"

// ValidateLabel reports whether key: value can be a replica label (or a
// pair of OnReplicas). The characters are those a NATS header value, a log
// line and a metric label carry without escaping; ',' and '=' are left
// out, since the replicas' announcements join labels with them.
func ValidateLabel(key, value string) error {
	for _, s := range []struct{ what, v string }{{"key", key}, {"value", value}} {
		if s.v == "" || len(s.v) > MaxLabelLen || strings.IndexFunc(s.v, func(r rune) bool { return r > 127 || !labelByte(byte(r)) }) >= 0 {
			return fmt.Errorf("label %s %s: %s", s.what, quote(s.v), labelRule)
		}
	}
	return nil
}

func labelByte(c byte) bool { return nameByte(c) || c == '.' }

// ValidateLabels reports the first problem with a set of labels, naming
// the label, or nil.
func ValidateLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("%d labels: at most %d", len(labels), MaxLabels)
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := ValidateLabel(k, labels[k]); err != nil {
			return err
		}
	}
	return nil
}

// Matches reports whether a replica with labels may run a job that asks
// for on (Job.OnReplicas): it has every pair of on. An empty on matches
// every replica.
func Matches(labels, on map[string]string) bool {
	for k, v := range on {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
