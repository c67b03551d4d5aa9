package crontab

import (
	"strings"
	"testing"

	"github.com/cronlock/cronlock/internal/config"
)

// yamlLookalikes are strings that an unquoted YAML scalar would read as a
// boolean, number, null, timestamp, anchor, alias, tag, comment, block or
// sequence, or that need an escape.
var yamlLookalikes = []string{
	"true", "false", "yes", "no", "on", "off", "y", "n", "True", "NO", "null", "Null", "~", "",
	"1e3", "0x10", "0o17", "017", "0b101", "1_000", "+1", "-1", ".5", ".inf", "-.Inf", ".nan",
	"2026-01-01", "12:30:00", "&a", "*a", "!tag", "- x", "k: v", "# c", "@x", "`x", "|", ">", "%x",
	"'", `"`, `\`, "a\tb", "a\nb", "a\rb", "\v\a\b\f\x1b\x7f", "\u0085\u2028\u2029\ufeff\u00a0", "é ✓ 日本",
}

// TestEveryStringQuoted: commands, names and env values that look like
// other YAML types come back from the configuration loader as the very
// strings of the crontab.
func TestEveryStringQuoted(t *testing.T) {
	t.Parallel()
	var tab strings.Builder
	for i, s := range yamlLookalikes {
		if strings.ContainsAny(s, "\n\r") { // a crontab line cannot hold them
			continue
		}
		tab.WriteString("V" + string(rune('A'+i%26)) + "=" + s + "\n")
	}
	// Commands whose derived names look like other types; a path where a
	// bare number would read as a sixth time field.
	cmds := []string{"/bin/true", "no", "on", "null", "1e3", "0x10", "yes", "off", "y", "/opt/017", "1_000", "/opt/2026-01-01", "true"}
	names := []string{"true", "no", "on", "null", "1e3", "0x10", "yes", "off", "y", "017", "1_000", "2026-01-01", "true-2"}
	for _, c := range cmds {
		tab.WriteString("0 0 * * * " + c + "\n")
	}
	res, err := Convert([]byte(tab.String()), Options{})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("%v %v", err, res.Errors)
	}
	cfg, err := config.Parse("out.yaml", res.YAML)
	if err != nil {
		t.Fatalf("output does not load: %v\n%s", err, res.YAML)
	}
	if len(cfg.Jobs) != len(cmds) {
		t.Fatalf("%d jobs, want %d", len(cfg.Jobs), len(cmds))
	}
	for i, j := range cfg.Jobs {
		if j.Name != names[i] || j.Shell != cmds[i] {
			t.Errorf("job %d: name %q command %q, want %q %q", i, j.Name, j.Shell, names[i], cmds[i])
		}
	}
	env := cfg.Jobs[0].Env
	for i, s := range yamlLookalikes {
		if strings.ContainsAny(s, "\n\r") {
			continue
		}
		k := "V" + string(rune('A'+i%26))
		// cron trims blanks around a value; a later line of the same name wins.
		if last := lastFor(i); last == i && env[k] != strings.TrimSpace(s) {
			t.Errorf("env %s = %q, want %q", k, env[k], strings.TrimSpace(s))
		}
	}
}

// lastFor returns the index of the last lookalike that sets the same
// variable as yamlLookalikes[i].
func lastFor(i int) int {
	last := i
	for k := i + 26; k < len(yamlLookalikes); k += 26 {
		if !strings.ContainsAny(yamlLookalikes[k], "\n\r") {
			last = k
		}
	}
	return last
}

// TestQuotedControlCharacters: every string the importer can be given,
// control characters and separators included, loads back unchanged, as a
// command (which, unlike a crontab line, a %-input can hold).
func TestQuotedControlCharacters(t *testing.T) {
	t.Parallel()
	for _, s := range yamlLookalikes {
		j := &jobOut{line: 1, text: s, name: "x", spec: "0 0 * * *", cmd: "echo " + s,
			env: [][2]string{{"V", s}, {s + "K", "v"}}}
		c := &converter{opt: Options{Source: "crontab"}, jobs: []*jobOut{j}}
		out := c.render(nil)
		cfg, err := config.Parse("out.yaml", out)
		if err != nil {
			t.Errorf("%q: output does not load: %v\n%s", s, err, out)
			continue
		}
		got := cfg.Jobs[0]
		if got.Shell != "echo "+s || got.Env["V"] != s || got.Env[s+"K"] != "v" {
			t.Errorf("%q: loaded shell %q env %q", s, got.Shell, got.Env)
		}
	}
}
