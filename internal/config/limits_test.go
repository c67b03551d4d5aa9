package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// jobHead is a job whose env value the depth tests fill in; the value
// starts on line 6.
const jobHead = "http: {listen: \"\"}\njobs:\n  - name: a\n    schedule: \"@daily\"\n    shell: \"true\"\n    env: "

// nested returns YAML of exactly depth levels (counted from the file's top
// mapping, which is the first) in several shapes, each with the line where
// its deepest level starts.
func nested(depth int) map[string]struct {
	src  string
	line int
} {
	type file = struct {
		src  string
		line int
	}
	in := depth - 3 // the top mapping, jobs and jobs[0] hold env's value
	indented := func(list bool) (string, int) {
		var b strings.Builder
		b.WriteString(jobHead[:len(jobHead)-1] + "\n")
		lines := 0
		for level := 0; level < in; lines++ {
			pad := strings.Repeat("  ", 3+lines)
			if list && lines%2 == 1 && level+2 <= in {
				b.WriteString(pad[2:] + "- k:\n") // a list under the key above, and a mapping in it
				level += 2
				continue
			}
			b.WriteString(pad + "k:\n")
			level++
		}
		b.WriteString(strings.Repeat("  ", 3+lines) + "v\n")
		return b.String(), 6 + lines
	}
	blockMappings, bmLine := indented(false)
	indentless, ilLine := indented(true)
	return map[string]file{
		"flow lists":          {jobHead + strings.Repeat("[", in) + strings.Repeat("]", in) + "\n", 6},
		"flow mappings":       {jobHead + strings.Repeat("{k: ", in) + "v" + strings.Repeat("}", in) + "\n", 6},
		"compact block lists": {jobHead + "\n      " + strings.Repeat("- ", in) + "x\n", 7},
		"block mappings":      {blockMappings, bmLine},
		"indentless lists":    {indentless, ilLine},
		"block then flow":     {jobHead + "\n      - - " + strings.Repeat("[", in-2) + strings.Repeat("]", in-2) + "\n", 7},
		"tags in a row":       {jobHead + strings.Repeat("!t ", depth+1) + "x\n", 6},
	}
}

// TestDepthLimit: a file nested MaxDepth+1 levels deep, in any shape, is
// refused as too deep at the line where the limit is crossed; one of
// MaxDepth levels is not (it may have other errors: env holds strings).
func TestDepthLimit(t *testing.T) {
	t.Parallel()
	for name, f := range nested(MaxDepth + 1) {
		_, err := Parse("bad.yaml", []byte(f.src))
		if !errors.Is(err, ErrTooDeep) {
			t.Errorf("%s, %d levels: got %v, want ErrTooDeep", name, MaxDepth+1, err)
			continue
		}
		if name != "tags in a row" {
			checkErrors(t, err, []want{{fmt.Sprint(f.line), "nested deeper than 64 levels"}})
		}
	}
	for name, f := range nested(MaxDepth) {
		if name == "tags in a row" {
			continue // its count differs by the levels around it
		}
		if _, err := Parse("ok.yaml", []byte(f.src)); errors.Is(err, ErrTooDeep) {
			t.Errorf("%s, %d levels: %v", name, MaxDepth, err)
		}
	}
}

// TestDepthLimitNotFooled: brackets, dashes and colons inside quoted
// strings, plain scalars, block scalars and comments are not nesting.
func TestDepthLimitNotFooled(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 200) + strings.Repeat("{", 200)
	src := fmt.Sprintf(`# %[1]s
http: {listen: ""}
jobs:
  - name: quoted
    schedule: "@daily"
    shell: "echo '%[1]s'"
    env: {A: '%[1]s', B: "%[1]s - - - : :"}  # %[1]s
  - name: plain
    schedule: "@daily"
    shell: echo %[1]s
  - name: literal
    schedule: "@daily"
    shell: |
      if [[ -f x ]]; then
        %[1]s
          - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - x
      fi
  - name: folded
    schedule: "@daily"
    shell: >-
      echo %[1]s
`, deep)
	cfg, err := Parse("ok.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Jobs) != 4 || !strings.Contains(cfg.Jobs[2].Shell, deep) {
		t.Fatalf("jobs %+v", cfg.Jobs)
	}
}

// TestFileSizeLimit: Parse and Load refuse a file over MaxFileSize, naming
// it, and Load reads no more of it than the limit.
func TestFileSizeLimit(t *testing.T) {
	t.Parallel()
	big := make([]byte, MaxFileSize+1) // only its length is looked at
	if _, err := Parse("bad.yaml", big); !errors.Is(err, ErrFileTooLarge) ||
		!strings.HasPrefix(err.Error(), "bad.yaml: the file is too large") {
		t.Fatalf("Parse: %v, want ErrFileTooLarge", err)
	}
	if err := checkSize("ok.yaml", big[:MaxFileSize]); err != nil {
		t.Fatalf("a file of MaxFileSize bytes: %v", err)
	}
	// A sparse file: reading it would take long were it not cut.
	path := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(path, []byte(job0), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 8<<30); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	var fe *FieldError
	if !errors.Is(err, ErrFileTooLarge) || !errors.As(err, &fe) || fe.File != path {
		t.Fatalf("Load: %v, want ErrFileTooLarge naming %s", err, path)
	}
}

// TestLargeFileLoads: a configuration of thousands of jobs is well within
// the limits (3,000 keep the test short under -race; 100,000 were measured
// with cronlock validate).
func TestLargeFileLoads(t *testing.T) {
	const largeJobs = 3000
	t.Parallel()
	var b strings.Builder
	b.WriteString("http: {listen: \"\"}\njobs:\n")
	for i := range largeJobs {
		fmt.Fprintf(&b, "  - name: job%d\n    schedule: \"@every 1h\"\n    shell: \"echo %d\"\n    env: {N: \"%d\"}\n", i, i, i)
	}
	cfg, err := Parse("big.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Jobs) != largeJobs || cfg.Jobs[largeJobs-1].Env["N"] != fmt.Sprint(largeJobs-1) {
		t.Fatalf("%d jobs", len(cfg.Jobs))
	}
}
