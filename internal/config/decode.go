package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/cronlock/cronlock/job"
)

// Why not yaml.UnmarshalWithOptions(data, &cfg, yaml.Strict())? goccy's
// decoder stops at the first error, and it converts scalars silently: 2.5
// into an int field becomes 2, "2" becomes 2, and 0755 into a string field
// becomes "493". So the file is parsed into goccy's AST and decoded here by a
// small schema walker driven by the yaml struct tags of Config: unknown and
// duplicate keys are rejected (the DisallowUnknownField rule, for every key
// at once), each scalar must already be of the field's YAML type, and every
// error carries the token's line and the field path.

// maxErrors caps how many problems one Parse reports.
const maxErrors = 100

// maxQuoted bounds how much of a value from the file an error repeats.
const maxQuoted = 80

var (
	durationType  = reflect.TypeFor[Duration]()
	stringsType   = reflect.TypeFor[[]string]()
	stringMapType = reflect.TypeFor[map[string]string]()
	jobsType      = reflect.TypeFor[[]Job]()
)

// decoder turns the AST of one file into a Config and collects problems.
type decoder struct {
	file string
	data []byte
	errs []*FieldError
	// lines maps the path of every key written in the file (and of every
	// list element and env variable) to its line, null values included.
	lines map[string]int
	// set holds the paths whose value in the file is not null.
	set map[string]bool
	// failed holds the paths that already have an error, so that checks
	// depending on them stay quiet instead of piling up follow-on errors.
	failed map[string]bool
	// fromFile holds the secret keys whose value was read from their _file
	// key's file (see readSecretFiles); nil until one is.
	fromFile map[string]bool
	// stream decodes the jobs list while the file is tokenized; nil when
	// the file is decoded whole.
	stream *jobStream
	// whole turns the stream off (see decodeWhole); chunkSize is the
	// stream's jobsChunk, smaller in tests.
	whole     bool
	chunkSize int
	// zones holds the time zones loaded so far, by name: each job of a
	// zone gets the same *time.Location (a few KB each), which lets the
	// scheduler share their parsed schedules too.
	zones map[string]*time.Location
	// schedules holds the schedules parsed so far, by spec (or
	// job.Job.ScheduleKey, see jobSchedule: a plain spec is its own key)
	// and zone: the
	// jobs of a large file share a few thousand (a job.Schedule is
	// immutable), and parsing each was a tenth of the file's time.
	schedules map[scheduleKey]job.Schedule
	// runtime: the data are runtime job definitions (ParseDefinitions),
	// which may do what a file job may not (after_run: delete).
	runtime bool
}

type scheduleKey struct {
	spec string
	loc  *time.Location
}

// schedule is job.ParseSchedule(spec, loc), parsed once per file (a job
// of that schedule alone: jobSchedule).
func (d *decoder) schedule(spec string, loc *time.Location) (job.Schedule, error) {
	return d.jobSchedule(job.Job{Schedule: spec, Location: loc})
}

// zone is job.LoadZone(name), looked up once per file.
func (d *decoder) zone(name string) (*time.Location, error) {
	if loc, ok := d.zones[name]; ok {
		return loc, nil
	}
	loc, err := job.LoadZone(name)
	if err != nil {
		return nil, err
	}
	if d.zones == nil {
		d.zones = map[string]*time.Location{}
	}
	d.zones[name] = loc
	return loc, nil
}

func newDecoder(file string, data []byte) *decoder {
	// About one key a line: sized once, the maps of a large file are not
	// rehashed as they grow.
	keys := bytes.Count(data, []byte{'\n'})
	return &decoder{
		file:      file,
		data:      data,
		lines:     make(map[string]int, keys),
		set:       make(map[string]bool, keys),
		failed:    map[string]bool{},
		chunkSize: jobsChunk,
	}
}

// problem records an error at line for path, and marks path as failed.
func (d *decoder) problem(line int, path, format string, args ...any) {
	d.failed[path] = true
	d.notice(line, path, format, args...)
}

// notice records an error at line for path without marking path as failed:
// for errors that say nothing about the value decoded for path.
func (d *decoder) notice(line int, path, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// err returns the collected problems sorted by line, or nil.
func (d *decoder) err() error {
	if len(d.errs) == 0 {
		return nil
	}
	sort.SliceStable(d.errs, func(i, j int) bool { return d.errs[i].Line < d.errs[j].Line })
	errs := make([]error, 0, min(len(d.errs), maxErrors)+1)
	for i, e := range d.errs {
		if i == maxErrors {
			errs = append(errs, &FieldError{File: d.file, Msg: fmt.Sprintf("%d more problems not shown", len(d.errs)-maxErrors)})
			break
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// decode parses the file and decodes it over the defaults. It returns nil
// when the file is not valid YAML; other problems are recorded and a
// partially decoded Config is returned for validation.
func (d *decoder) decode() *Config {
	if !d.whole {
		d.stream = newJobStream(d, d.chunkSize)
	}
	file, err := parse(d.file, d.data, d.stream)
	if !d.stream.usable() || d.stream.active() && err != nil {
		return d.decodeWhole()
	}
	var limit *FieldError
	switch {
	case errors.As(err, &limit): // too large or too deep: nothing was parsed
		d.errs = append(d.errs, limit)
		return nil
	case err != nil:
		d.syntaxError(err)
		return nil
	}
	var body ast.Node
	for _, doc := range file.Docs {
		if doc == nil || isNull(doc.Body) {
			continue
		}
		if _, ok := doc.Body.(*ast.DirectiveNode); ok {
			continue // %YAML 1.2 and the like: goccy keeps them as a document
		}
		if body != nil {
			d.problem(line(doc.Body), "", "more than one YAML document (---) in the file; write a single document")
			break
		}
		body = doc.Body
	}
	cfg := defaults()
	if body != nil {
		if _, ok := body.(*ast.MappingNode); ok {
			d.value(body, "", reflect.ValueOf(&cfg).Elem())
		} else if d.supported(body, "") {
			d.problem(line(body), "", "the file must be a mapping of keys (nats, lock, ..., jobs), got %s", kind(body))
		}
	}
	if d.stream.streamed() && !d.stream.consumed {
		return d.decodeWhole()
	}
	if !d.set["http"] {
		cfg.HTTP.Listen = DefaultHTTPListen
	}
	return &cfg
}

// decodeWhole starts over and decodes the file without the job stream: for
// the files the stream does not take as they are (see jobstream.go).
func (d *decoder) decodeWhole() *Config {
	*d = *newDecoder(d.file, d.data)
	d.whole = true
	return d.decode()
}

// parse runs goccy's parser, turning a panic in it into an error: no input
// may crash the caller. A file over MaxFileSize or MaxDepth is refused with
// a *FieldError before the parser sees it.
func parse(file string, data []byte, stream *jobStream) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, errors.New("the YAML parser failed on this input")
		}
	}()
	if err := checkSize(file, data); err != nil {
		return nil, err
	}
	var tokens token.Tokens
	if stream != nil {
		cuts := jobCuts(data, stream.chunkSize)
		if len(cuts) > 0 {
			// Room for every entry the cuts count (up to a chunk more):
			// grown by append, the list of 100,000 jobs (464 B each) was
			// copied some 20 times, 250 MB allocated, and the last copy
			// raised validate's peak by a third.
			stream.jobs = make([]Job, 0, (len(cuts)+1)*stream.chunkSize)
		}
		if err := tokenize(file, string(data), cuts, stream); err != nil {
			return nil, err
		}
		tokens = stream.end()
	} else {
		all := &tokenList{}
		if err := tokenize(file, string(data), nil, all); err != nil {
			return nil, err
		}
		tokens = all.tokens
	}
	// Duplicate keys are reported by the decoder, with their field path,
	// all at once.
	return parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
}

// secretKey matches a line holding a key whose value may be a secret: token
// and password, and keys such as API_TOKEN or DB_PASSWORD in env.
var secretKey = regexp.MustCompile(`(?i)(token|passw|secret|key|credential|webhook|headers|authorization)[a-z0-9_.-]*["']?\s*:`)

// quotedText matches Go-quoted strings and runes inside parser messages.
var quotedText = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)

// secretLine reports whether the 1-based line ln of data may hold (part of)
// a secret: it has a secret-looking key, or it continues the value of such a
// key (the nearest line above it that is indented less is such a key's).
func secretLine(data []byte, ln int) bool {
	lines := strings.Split(string(data), "\n")
	if ln < 1 || ln > len(lines) {
		return false
	}
	for ln > 1 && strings.TrimSpace(lines[ln-1]) == "" {
		ln-- // a blank line belongs to the value above it, if any
	}
	if secretKey.MatchString(lines[ln-1]) {
		return true
	}
	in := indent(lines[ln-1])
	for i := ln - 2; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" && indent(lines[i]) < in {
			return secretKey.MatchString(lines[i])
		}
	}
	return false
}

// indent returns the column where the content of line s starts, counting
// the "- " of list entries as indentation.
func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " \t-")) }

// syntaxError records a YAML syntax error. goccy's messages can quote a bit
// of the offending text (a block scalar header, an escape, a tag character);
// when the error is on a line that may hold a secret, quoted text is
// redacted. The source excerpt goccy appends is never included.
func (d *decoder) syntaxError(err error) {
	ln, msg := 0, err.Error()
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			ln = tk.Position.Line
		}
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if ln <= 0 || secretLine(d.data, ln) {
		msg = quotedText.ReplaceAllString(msg, Redacted)
	}
	d.problem(max(ln, 0), "", "invalid YAML: %s", msg)
}

// supported rejects the YAML features this package does not accept.
func (d *decoder) supported(n ast.Node, path string) bool {
	switch n.(type) {
	case *ast.AnchorNode:
		d.problem(line(n), path, "YAML anchors (&name) are not supported; write the value out")
	case *ast.AliasNode:
		d.problem(line(n), path, "YAML aliases (*name) are not supported; write the value out")
	case *ast.TagNode:
		d.problem(line(n), path, "YAML tags (!tag) are not supported; quote the value if it must be a string")
	case *ast.MergeKeyNode:
		d.problem(line(n), path, "YAML merge keys (<<) are not supported; write the keys out")
	default:
		return true
	}
	return false
}

// value decodes n into v, whose type is one of the types used in Config.
func (d *decoder) value(n ast.Node, path string, v reflect.Value) {
	if !d.supported(n, path) {
		return
	}
	switch t := v.Type(); {
	case t == durationType:
		if dur, ok := d.duration(n, path); ok {
			v.SetInt(int64(dur))
		}
	case t == stringsType:
		d.strings(n, path, v)
	case t == stringMapType, t == secretMapType:
		d.stringMap(n, path, v)
	case t == jobsType:
		d.jobs(n, path, v)
	case t == notifyTargetsType:
		d.notifyTargets(n, path, v)
	case t == kindsType:
		d.kinds(n, path, v)
	case t == groupsType:
		d.groups(n, path, v)
	case t == payloadType:
		d.payload(n, path, v)
	case t.Kind() == reflect.String: // string and Secret
		if s, ok := d.str(n, path); ok {
			v.SetString(s)
		}
	case t.Kind() == reflect.Int:
		if i, ok := d.int(n, path); ok {
			v.SetInt(int64(i))
		}
	case t.Kind() == reflect.Bool:
		if b, ok := d.bool(n, path); ok {
			v.SetBool(b)
		}
	case t.Kind() == reflect.Struct:
		d.structure(n, path, v)
	default:
		d.problem(line(n), path, "internal error: no decoder for %s", t)
	}
}

// structFields is what structure needs of a struct type: the field index
// path (reflect.Value.FieldByIndex) of each yaml key, and the keys in field
// order for the "valid keys here" message.
type structFields struct {
	index map[string][]int
	names []string
}

// fieldsByType caches fieldIndex per struct type (reflect.Type to
// *structFields): a file of 100,000 jobs decodes the Job type 100,000 times,
// and building its map each time cost a third of the parse.
var fieldsByType sync.Map

// fieldsOf returns the cached structFields of the struct type t.
func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldsByType.Load(t); ok {
		return f.(*structFields)
	}
	idx, names := fieldIndex(t)
	f, _ := fieldsByType.LoadOrStore(t, &structFields{index: idx, names: names})
	return f.(*structFields)
}

// fieldIndex maps the yaml tag names of a struct type to field index
// paths (reflect.Value.FieldByIndex). The keys of an embedded struct tagged
// `yaml:",inline"` are the struct's own.
func fieldIndex(t reflect.Type) (map[string][]int, []string) {
	idx := map[string][]int{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" && opts == "inline" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			inner, innerNames := fieldIndex(f.Type)
			for _, n := range innerNames {
				idx[n] = append([]int{i}, inner[n]...)
			}
			names = append(names, innerNames...)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		idx[name] = []int{i}
		names = append(names, name)
	}
	return idx, names
}

// structure decodes a mapping into the struct v, rejecting unknown and
// duplicate keys. Keys with a null value leave the field untouched.
func (d *decoder) structure(n ast.Node, path string, v reflect.Value) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.typeError(n, path, "a mapping")
		return
	}
	fields := fieldsOf(v.Type())
	d.entries(m, path, func(name, child string, keyLine int, val ast.Node) {
		i, known := fields.index[name]
		if !known {
			d.problem(keyLine, child, "unknown key (valid keys here: %s)", strings.Join(fields.names, ", "))
			return
		}
		d.lines[child] = keyLine
		if isNull(val) {
			return
		}
		d.set[child] = true
		d.value(val, child, v.FieldByIndex(i))
	})
}

// entries calls fn for each key-value pair of m whose key is a plain string
// and not a repeat of an earlier key, with the key's path and line.
func (d *decoder) entries(m *ast.MappingNode, path string, fn func(name, child string, keyLine int, val ast.Node)) {
	seen := map[string]int{}
	for _, mv := range m.Values {
		if mv == nil || mv.Key == nil {
			continue
		}
		kl := line(mv.Key)
		if !d.supported(mv.Key, path) {
			continue
		}
		k, ok := mv.Key.(*ast.StringNode)
		if !ok {
			d.notice(kl, path, "keys must be strings, got %s", kind(mv.Key))
			continue
		}
		child := join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			// The first value stays decoded and checked.
			d.notice(kl, child, "duplicate key (first at line %d)", first)
			continue
		}
		seen[k.Value] = kl
		fn(k.Value, child, kl, mv.Value)
	}
}

// str decodes a string scalar (plain, quoted or block).
func (d *decoder) str(n ast.Node, path string) (string, bool) {
	switch n := n.(type) {
	case *ast.StringNode:
		return n.Value, true
	case *ast.LiteralNode:
		if n.Value == nil {
			return "", true
		}
		return n.Value.Value, true
	}
	d.typeError(n, path, "a string")
	return "", false
}

// int decodes an integer scalar.
func (d *decoder) int(n ast.Node, path string) (int, bool) {
	if in, ok := n.(*ast.IntegerNode); ok {
		switch x := in.Value.(type) {
		case int64:
			if x >= math.MinInt && x <= math.MaxInt {
				return int(x), true
			}
		case uint64:
			if x <= math.MaxInt {
				return int(x), true
			}
		}
		d.problem(line(n), path, "integer out of range")
		return 0, false
	}
	if s, ok := n.(*ast.StringNode); ok && isPlain(s) && isDigits(strings.TrimLeft(s.Value, "+-")) {
		// goccy leaves integers that overflow 64 bits as strings.
		d.problem(line(n), path, "integer out of range")
		return 0, false
	}
	d.typeError(n, path, "an integer")
	return 0, false
}

// bool decodes a YAML 1.2 boolean: true or false (any case). The YAML 1.1
// spellings yes, no, on and off are strings in YAML 1.2; they are rejected
// with a hint rather than guessed at.
func (d *decoder) bool(n ast.Node, path string) (bool, bool) {
	if b, ok := n.(*ast.BoolNode); ok {
		return b.Value, true
	}
	if s, ok := n.(*ast.StringNode); ok && isPlain(s) {
		switch strings.ToLower(s.Value) {
		case "y", "yes", "on", "n", "no", "off":
			d.problem(line(n), path, "expected true or false, got %s (a string in YAML 1.2)", quote(s.Value))
			return false, false
		}
	}
	d.typeError(n, path, "true or false")
	return false, false
}

// duration decodes a non-negative Go duration string.
func (d *decoder) duration(n ast.Node, path string) (Duration, bool) {
	switch n := n.(type) {
	case *ast.StringNode:
		dur, err := time.ParseDuration(n.Value)
		if err != nil {
			d.problem(line(n), path, "invalid duration %s: use a Go duration such as \"20s\", \"1m30s\" or \"500ms\"", quote(n.Value))
			return 0, false
		}
		if dur < 0 {
			d.problem(line(n), path, "must not be negative, got %s", dur)
			return 0, false
		}
		return Duration(dur), true
	case *ast.IntegerNode, *ast.FloatNode:
		d.problem(line(n), path, "a bare number is not a duration: add a unit, such as \"20s\" or \"500ms\"")
		return 0, false
	}
	d.typeError(n, path, "a duration string such as \"20s\"")
	return 0, false
}

// strings decodes a list of strings into v (a []string), leaving an empty,
// non-nil slice for an empty list.
func (d *decoder) strings(n ast.Node, path string, v reflect.Value) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.typeError(n, path, "a list of strings")
		return
	}
	out := make([]string, 0, len(seq.Values))
	for i, el := range seq.Values {
		p := fmt.Sprintf("%s[%d]", path, i)
		d.lines[p] = entryLine(seq, i)
		if el == nil || !d.supported(el, p) {
			continue
		}
		if s, ok := d.str(el, p); ok {
			out = append(out, s)
		}
	}
	v.Set(reflect.ValueOf(out))
}

// stringMap decodes a mapping of strings to strings into v, a map from
// string to a string type (string or Secret).
func (d *decoder) stringMap(n ast.Node, path string, v reflect.Value) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.typeError(n, path, "a mapping of strings")
		return
	}
	out := reflect.MakeMapWithSize(v.Type(), len(m.Values))
	d.entries(m, path, func(name, child string, keyLine int, val ast.Node) {
		d.lines[child] = keyLine
		if val == nil || !d.supported(val, child) {
			return
		}
		if s, ok := d.str(val, child); ok {
			out.SetMapIndex(reflect.ValueOf(name), reflect.ValueOf(s).Convert(v.Type().Elem()))
		}
	})
	v.Set(out)
}

// jobs decodes the list of jobs into v (a []Job). Each job starts from the
// job defaults and records its line.
func (d *decoder) jobs(n ast.Node, path string, v reflect.Value) {
	if d.stream != nil && d.stream.take(n, path) {
		v.Set(reflect.ValueOf(d.stream.jobs))
		return
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.typeError(n, path, "a list of jobs")
		return
	}
	out := make([]Job, 0, len(seq.Values))
	for i := range seq.Values {
		out = append(out, d.job(seq, i, path, i))
	}
	v.Set(reflect.ValueOf(out))
}

// job decodes the i-th entry of seq as the job at index of the list at
// path.
func (d *decoder) job(seq *ast.SequenceNode, i int, path string, index int) Job {
	p := path + "[" + strconv.Itoa(index) + "]"
	j := Job{Grace: DefaultJobGrace, Line: entryLine(seq, i)}
	d.lines[p] = j.Line
	if el := seq.Values[i]; el == nil || isNull(el) {
		d.problem(j.Line, p, "empty job; expected a mapping with name, schedule and command or shell")
	} else {
		d.value(el, p, reflect.ValueOf(&j).Elem())
	}
	return j
}

// typeError records that n is not of the wanted YAML type.
func (d *decoder) typeError(n ast.Node, path, want string) {
	hint := ""
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		if want == "a string" {
			hint = "; quote the value to make it a string"
		}
	}
	d.problem(line(n), path, "expected %s, got %s%s", want, kind(n), hint)
}

// kind names the YAML type of n for error messages.
func kind(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "nothing (null)"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode:
		return "an integer"
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.MappingNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	}
	return n.Type().String()
}

// line returns the 1-based line of n's first token, or 0.
func line(n ast.Node) int {
	if n == nil {
		return 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

// entryLine returns the line of the i-th entry of seq: its '-' for block
// lists, its value otherwise.
func entryLine(seq *ast.SequenceNode, i int) int {
	if i < len(seq.Entries) && seq.Entries[i] != nil && seq.Entries[i].Start != nil && seq.Entries[i].Start.Position != nil {
		return seq.Entries[i].Start.Position.Line
	}
	if l := line(seq.Values[i]); l > 0 {
		return l
	}
	return line(seq)
}

func isNull(n ast.Node) bool {
	if n == nil {
		return true
	}
	_, ok := n.(*ast.NullNode)
	return ok
}

// isPlain reports whether s was written without quotes.
func isPlain(s *ast.StringNode) bool {
	return s.Token != nil && s.Token.Type == token.StringType
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// simpleKey reports whether key can follow a '.' in a field path unquoted:
// it matches ^[A-Za-z0-9_-]+$.
func simpleKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// join appends key to a field path: "a.b", or a["odd key"] when the key
// would be ambiguous in a path.
func join(path, key string) string {
	if !simpleKey(key) {
		return path + "[" + quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// parent returns the path one level up: "jobs[1].name" -> "jobs[1]" ->
// "jobs" -> "".
func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// quote returns s Go-quoted for a message, shortened when long.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]+"…") + fmt.Sprintf(" (%d bytes)", len(s))
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
