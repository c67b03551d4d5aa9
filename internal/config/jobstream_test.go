package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Every Parse in this package's tests (and FuzzParse's inputs) is checked
// against decoding the file whole, and against the job stream cutting the
// file and parsing it at every entry: the stream must never change a
// result or an error.
func init() { testParseHook = checkStreamSame }

// smallCutLimit: larger files are not checked, to keep the tests of large
// files fast (TestJobStreamTakesPlainLists checks a list cut in chunks).
const smallCutLimit = 16 << 10

func checkStreamSame(filename string, data []byte, cfg *Config, err error) {
	if len(data) > smallCutLimit {
		return
	}
	whole := newDecoder(filename, data)
	whole.whole = true
	wantCfg, wantErr := parseWith(whole)
	for _, chunk := range []int{1, jobsChunk} {
		d := newDecoder(filename, data)
		d.chunkSize = chunk
		gotCfg, gotErr := parseWith(d)
		if chunk == jobsChunk {
			gotCfg, gotErr = cfg, err
		}
		if msg := sameResult(gotCfg, gotErr, wantCfg, wantErr); msg != "" {
			panic(fmt.Sprintf("job stream (chunks of %d) differs from whole-file decoding: %s\ninput:\n%s", chunk, msg, data))
		}
	}
}

// sameResult describes how two results of Parse differ, or returns "".
func sameResult(gotCfg *Config, gotErr error, wantCfg *Config, wantErr error) string {
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		return fmt.Sprintf("error\n got %v\nwant %v", gotErr, wantErr)
	}
	if (gotCfg == nil) != (wantCfg == nil) {
		return fmt.Sprintf("config %v, want %v", gotCfg != nil, wantCfg != nil)
	}
	if gotCfg == nil {
		return ""
	}
	g, w := *gotCfg, *wantCfg
	g.Jobs, w.Jobs = withoutLocations(g.Jobs), withoutLocations(w.Jobs)
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("config\n got %+v\nwant %+v", g, w)
	}
	return ""
}

// withoutLocations returns a copy of jobs with each Location replaced by its
// name in Timezone's place: two loads of a zone are equal but not identical.
func withoutLocations(jobs []Job) []Job {
	out := make([]Job, len(jobs))
	for i, j := range jobs {
		if j.Location != nil {
			j.Timezone += "|" + j.Location.String()
		}
		j.Location = nil
		out[i] = j
	}
	return out
}

// streamEntries are job entries written in the ways that make cutting a
// list between entries delicate: block scalars (empty, last, with an
// indentation indicator), multi-line plain and quoted scalars whose lines
// look like entries, flow collections over several lines, comments and
// blank lines, nested lists, errors.
var streamEntries = []string{
	"  - name: a%d\n    schedule: \"@daily\"\n    shell: \"true\"\n",
	"  - {name: f%d, schedule: \"@hourly\", command: [echo, hi]}\n",
	"  - name: b%d\n    schedule: \"@daily\"\n    shell: |\n      echo one\n      echo two\n",
	"  - name: e%d\n    schedule: \"@daily\"\n    shell: |\n",
	"  - name: g%d\n    schedule: \"@daily\"\n    shell: >-\n      folded\n\n      text\n",
	"  - name: i%d\n    schedule: \"@daily\"\n    shell: |2\n        indented\n",
	"  - name: p%d\n    schedule: \"@daily\"\n    shell: echo a\n      b\n",
	"  - name: q%d\n    schedule: \"@daily\"\n    shell: \"echo\n  - name: inside\n  x\"\n",
	"  - name: s%d\n    schedule: \"@daily\"\n    shell: 'echo\n  - name: inside'\n",
	"  - name: m%d\n    schedule: \"@daily\"\n    command: [\n  echo,\n  hi]\n",
	"  - name: fm%d\n    schedule: \"@daily\"\n    env: {A: b,\n  - C: d}\n    shell: x\n",
	"# a comment at column 1\n  - name: c%d # trailing\n    schedule: \"@daily\"\n\n    shell: \"true\"\n  # indented comment\n",
	"  - name: n%d\n    schedule: \"@daily\"\n    shell: \"true\"\n    notify:\n      - webhook: https://example.com/hook\n      - command: [\"true\"]\n",
	"  -\n    name: l%d\n    schedule: \"@daily\"\n    shell: \"true\"\n",
	"  -\n",
	"  - # only a comment %d\n",
	"  - name: u%d\n    schedule: \"@daily\"\n    shell: \"true\"\n    bogus: 1\n    retries: \"2\"\n",
	"  - name: a0\n    schedule: \"61 * * * *\"\n    shell: \"true\"\n    timeout: 5\n",
	"  - name: x%d\n    schedule: \"@daily\"\n    shell: \"true\"\n    name: dup\n",
	"  - name: an%d\n    schedule: &s \"@daily\"\n    shell: \"true\"\n",
	"  - name: al%d\n    schedule: *s\n    shell: \"true\"\n",
	"  - name: t%d\n    schedule: !!str \"@daily\"\n    shell: \"true\"\n",
	"  - name: k%d\n    ? schedule\n    : \"@daily\"\n    shell: \"true\"\n",
	"  - name: mis%d\n   schedule: \"@daily\"\n    shell: \"true\"\n",
	"  - name: mis%d\n  schedule: \"@daily\"\n",
	"   - name: deeper%d\n     schedule: \"@daily\"\n     shell: \"true\"\n",
	"  - name: tab%d\n    schedule: \"@daily\"\n\tshell: \"true\"\n",
	"  - name: crlf%d\r\n    schedule: \"@daily\"\r\n    shell: \"true\"\r\n",
	"  - name: bad%d\n    schedule: \"@daily\"\n    shell: \"unterminated\n",
	"  - name: z%d\n    schedule: \"@daily\"\n    shell: [unclosed\n",
	"  - name: r%d\n    schedule: \"@daily\"\n    shell: \"true\"\n    retries: 1\n  - oops\n",
}

// streamFrames put a list of entries into a file: heads and tails with
// other keys, document markers, a second jobs key, an indentless list.
var streamFrames = []struct{ head, tail string }{
	{"jobs:\n", ""},
	{"log:\n  level: info\njobs:\n", "http:\n  listen: \"\"\n"},
	{"---\njobs:\n", "...\n"},
	{"jobs:\n", "---\nlog: {}\n"},
	{"jobs:\n", "jobs:\n  - name: again\n    schedule: \"@daily\"\n    shell: x\n"},
	{"jobs: # the jobs\n", "log: {level: warn}"},
	{"\"jobs\":\n", "  # trailing comment\n"},
	{"jobs:\n", "  - name: last\n    schedule: \"@daily\"\n    shell: \"true\""},
	{"jobs: &l\n", ""},
	{"jobs:\n", "  -\n"},
	{"jobs:\n", "-\nlog: {level: warn}\n"},
	{"jobs:\n", "log:\n  level: [\n"},
}

// TestJobStreamSameAsWhole runs Parse (which checks itself, see
// checkStreamSame) over pairs of streamEntries: in the plain frame each
// entry before the next one and before a third, in the other frames every
// second entry before the next; each list also indentless.
func TestJobStreamSameAsWhole(t *testing.T) {
	t.Parallel()
	n := 0
	for k, f := range streamFrames {
		for i, a := range streamEntries {
			next := []int{(i + 1) % len(streamEntries), (i*7 + 3) % len(streamEntries)}
			if k > 0 {
				if i%2 == 1 {
					continue
				}
				next = next[:1]
			}
			for _, j := range next {
				list := fmt.Sprintf(a, i) + fmt.Sprintf(streamEntries[j], 100+j) + fmt.Sprintf(streamEntries[0], 200+i)
				_, _ = Parse("stream.yaml", []byte(f.head+list+f.tail))
				_, _ = Parse("stream.yaml", []byte(f.head+unindent(list)+f.tail))
				n += 2
			}
		}
	}
	t.Logf("%d files decoded streamed and whole", n)
}

// unindent moves a list written at column 3 to column 1.
func unindent(list string) string {
	lines := strings.SplitAfter(list, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "")
}

// TestJobStreamTakesPlainLists checks that the stream does its work on the
// files it is for, rather than leaving every file to the whole-file
// decoder: a plain list, indented or not, with comments, block scalars and
// errors, is cut and decoded in chunks.
func TestJobStreamTakesPlainLists(t *testing.T) {
	t.Parallel()
	var list strings.Builder
	for i := range 50 {
		fmt.Fprintf(&list, streamEntries[i%3], i)
	}
	list.WriteString("  - name: a6\n    schedule: \"@daily\"\n    shell: \"true\"\n    bogus: 1\n")
	head, tail := "# jobs\nlog:\n  level: info\njobs:\n", "http:\n  listen: \"\"\n"
	for _, src := range []string{head + list.String() + tail, head + unindent(list.String()) + tail} {
		d := newDecoder("bad.yaml", []byte(src))
		d.chunkSize = 4
		_, err := parseWith(d)
		if d.whole || !d.stream.streamed() || d.stream.cuts != 12 {
			t.Fatalf("the stream gave up (whole %v, cuts %d) on:\n%s", d.whole, d.stream.cuts, src)
		}
		last := strings.Count(src[:strings.LastIndex(src, "- name: a6")], "\n") + 1
		checkErrors(t, err, []want{
			{fmt.Sprint(last) + ": jobs[50].name", `duplicate job name "a6" (first used by jobs[6]`},
			{fmt.Sprint(last+3) + ": jobs[50].bogus", "unknown key"},
		})
	}
}
