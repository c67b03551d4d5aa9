package deploy

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// Docker is not available to the tests; these check the Dockerfile's
// structure and run its build command outside a container.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int    // of its first line
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// stage is one FROM and the instructions up to the next.
type stage struct {
	base, name string // FROM base [AS name]
	ins        []instruction
}

type dockerfile struct {
	stages []stage
}

// parseDockerfile reads file into stages; parser directives and comments
// are skipped. Only what these tests need: no heredocs, no escape directive.
func parseDockerfile(t *testing.T, file string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var df dockerfile
	var cur string
	start := 0
	for i, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur == "") {
			continue
		}
		if cur == "" {
			start = i + 1
		}
		if s, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur += s + " "
			continue
		}
		cur += trimmed
		cmd, args, _ := strings.Cut(cur, " ")
		in := instruction{start, strings.ToUpper(cmd), strings.TrimSpace(args)}
		cur = ""
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			if len(f) == 0 {
				t.Fatalf("%s:%d: FROM without an image", file, start)
			}
			st := stage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			df.stages = append(df.stages, st)
			continue
		}
		if len(df.stages) == 0 {
			t.Fatalf("%s:%d: %s before the first FROM", file, start, in.cmd)
		}
		last := &df.stages[len(df.stages)-1]
		last.ins = append(last.ins, in)
	}
	return df
}

func (d dockerfile) final() stage { return d.stages[len(d.stages)-1] }

// last is the stage's last cmd instruction.
func (s stage) last(cmd string) (instruction, bool) {
	for i := len(s.ins) - 1; i >= 0; i-- {
		if s.ins[i].cmd == cmd {
			return s.ins[i], true
		}
	}
	return instruction{}, false
}

// execForm is the JSON array of the stage's last cmd instruction.
func (s stage) execForm(t *testing.T, cmd string) []string {
	t.Helper()
	in, ok := s.last(cmd)
	var args []string
	if !ok || json.Unmarshal([]byte(in.args), &args) != nil || len(args) == 0 {
		t.Fatalf("Dockerfile: final stage: %s %q, want an exec form [\"...\"]", cmd, in.args)
	}
	return args
}

// shellImages are final-stage bases known to have /bin/sh, which `shell:`
// jobs run with. (distroless' debug images have /busybox/sh only.)
var shellImages = map[string]bool{"alpine": true, "busybox": true, "debian": true, "ubuntu": true}

// versionFlag sets what `cronlock version` prints (cmd/cronlock/doc.go).
const versionFlag = "-X github.com/cronlock/cronlock/internal/app.version="

func TestDockerfile(t *testing.T) {
	df := parseDockerfile(t, "../../Dockerfile")
	if len(df.stages) < 2 {
		t.Fatalf("%d stages, want a multi-stage build", len(df.stages))
	}
	build, final := df.stages[0], df.final()
	if build.name == "" || !strings.HasPrefix(build.base, "golang:") {
		t.Errorf("first stage FROM %s AS %q, want a named golang stage", build.base, build.name)
	}
	if repo, _, _ := strings.Cut(final.base, ":"); !shellImages[repo] {
		t.Errorf("final stage FROM %s: not an image known to have /bin/sh", final.base)
	}
	user, ok := final.last("USER")
	uid, _, _ := strings.Cut(user.args, ":")
	// Numeric: with runAsNonRoot the kubelet refuses a user name it cannot check.
	if n, err := strconv.Atoi(uid); !ok || err != nil || n == 0 {
		t.Errorf("final stage USER %q, want a numeric non-root uid", user.args)
	}

	goBuild := buildCommand(t, build)
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", versionFlag + "${VERSION}"} {
		if !strings.Contains(goBuild.args, want) {
			t.Errorf("Dockerfile:%d: go build without %s", goBuild.line, want)
		}
	}
	if arg, _ := build.last("ARG"); !strings.HasPrefix(arg.args, "VERSION") {
		t.Errorf("build stage: ARG %q, want ARG VERSION", arg.args)
	}
	src, dst := copiedBinary(t, df)
	if !strings.Contains(goBuild.args, "-o "+src+" ") {
		t.Errorf("Dockerfile:%d: go build does not write %s, which the final stage copies", goBuild.line, src)
	}
	if ep := final.execForm(t, "ENTRYPOINT"); ep[0] != dst {
		t.Errorf("ENTRYPOINT %q, want the copied binary %s", ep, dst)
	}
}

// buildCommand is the build stage's RUN with `go build`.
func buildCommand(t *testing.T, build stage) instruction {
	t.Helper()
	for _, in := range build.ins {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			return in
		}
	}
	t.Fatal("Dockerfile: no RUN go build in the first stage")
	return instruction{}
}

// copiedBinary is the final stage's COPY --from=<build stage> SRC DST.
func copiedBinary(t *testing.T, df dockerfile) (src, dst string) {
	t.Helper()
	in, ok := df.final().last("COPY")
	f := strings.Fields(in.args)
	if !ok || len(f) != 3 || f[0] != "--from="+df.stages[0].name {
		t.Fatalf("final stage: COPY %q, want COPY --from=%s SRC DST", in.args, df.stages[0].name)
	}
	return f[1], f[2]
}

// The Dockerfile's build command, run here, makes a static binary that
// prints the version given and links none of the tests' dependencies.
//
// It rebuilds every dependency without the race detector and with
// -trimpath, which costs minutes on a fresh 2-core machine, so it runs only
// with CRONLOCK_TEST_DOCKERFILE_BUILD=1 (the structural test above always
// runs).
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() || os.Getenv("CRONLOCK_TEST_DOCKERFILE_BUILD") != "1" {
		t.Skip("set CRONLOCK_TEST_DOCKERFILE_BUILD=1 to run the Dockerfile's build command")
	}
	df := parseDockerfile(t, "../../Dockerfile")
	src, _ := copiedBinary(t, df)
	bin := filepath.Join(t.TempDir(), "cronlock")
	script := strings.Replace(buildCommand(t, df.stages[0]).args, "-o "+src+" ", "-o "+bin+" ", 1)
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-dockerfile-test")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}

	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("v0.0.0-dockerfile-test")) {
		t.Errorf("cronlock version: %v: %s, want v0.0.0-dockerfile-test", err, out)
	}
	info, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, info)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath=true"} {
		if !bytes.Contains(info, []byte(want)) {
			t.Errorf("go version -m: no %s:\n%s", want, info)
		}
	}
	for _, testOnly := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/moby/"} {
		if bytes.Contains(info, []byte("\tdep\t"+testOnly)) {
			t.Errorf("the binary links %s, a test-only dependency:\n%s", testOnly, info)
		}
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: not static")
		}
	}
}

// .dockerignore keeps out of the build context nothing the build needs:
// go.mod, go.sum, and every source and embedded file of the packages
// cmd/cronlock is built from.
func TestDockerignore(t *testing.T) {
	f, err := os.Open("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	if ex, _ := pm.MatchesOrParentMatches(".git/HEAD"); !ex {
		t.Error(".git is in the build context")
	}
	for _, file := range buildInputs(t) {
		if ex, err := pm.MatchesOrParentMatches(file); ex || err != nil {
			t.Errorf(".dockerignore excludes %s, which the build needs (%v)", file, err)
		}
	}
}

// buildInputs are the repository's files `go build ./cmd/cronlock` reads,
// relative to the repository root.
func buildInputs(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f",
		`{{if and .Module .Module.Main}}{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{end}}`,
		"./cmd/cronlock")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"go.mod", "go.sum"}
	for _, abs := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	if len(files) < 10 {
		t.Fatalf("go list found only %v", files)
	}
	return files
}
