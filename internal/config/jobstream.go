package config

import (
	"bytes"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Why a job stream? goccy's tokens and AST take some 40 times the file's
// size while they are alive (263 MB for the 6.2 MB file of 100,000 jobs),
// and a file's tokens are linked to each other, so none is freed before the
// whole file is decoded. The top-level jobs list is where a large file is
// large, so its entries are parsed and decoded a chunk at a time while the
// file is tokenized, and only the rest of the file (the skeleton) is kept
// and parsed whole.
//
// The result must be exactly that of parsing the file whole, errors and
// their order included. So the stream only takes a jobs list written the
// plain way: a block list under a top-level "jobs:" key at column 1, each
// entry starting on its own line at the list's column, every other line of
// the list indented deeper, no flow collection open across lines at or left
// of that column, and no anchors, aliases, tags, merge keys, "?" keys or
// document markers ("---" as the file's first token excepted). Anything
// else, a chunk or the skeleton that does not parse, or a skeleton whose
// jobs list is not the one decoded as Config.Jobs, and the file is decoded
// again the whole-file way (decodeWhole), which gives today's result and
// errors; so an unusual file costs two tokenizations, never a difference.

// jobsChunk is how many job entries are parsed and decoded at a time: small
// enough that a chunk's tokens and AST are a few MB, large enough that the
// parser's per-call cost does not count.
const jobsChunk = 512

// streamState is where a jobStream is in the file.
type streamState int

const (
	seekJobsKey  streamState = iota // before the top-level jobs key
	sawJobsKey                      // after "jobs"
	sawJobsColon                    // after "jobs:"
	inJobs                          // in the list's entries
	afterJobs                       // after the list, or never streaming
)

// jobStream is the tokenSink that decodes the top-level jobs list a chunk at
// a time and keeps the other tokens (the skeleton) for the parser. In the
// skeleton the list is a single empty entry, marker, which the decoder
// recognizes (take) to use the decoded jobs instead: "- null".
type jobStream struct {
	d         *decoder
	chunkSize int
	state     streamState
	skeleton  token.Tokens
	seen      bool // a token other than a comment was seen
	line      int  // line of the last token other than a comment
	col       int  // column of the list's '-'
	// chunk holds the tokens of the entries not decoded yet, entries
	// counts them.
	chunk   token.Tokens
	entries int
	// marker is a copy of the first entry's '-', the skeleton's list.
	marker *token.Token
	jobs   []Job
	// errs are the problems found in the jobs, added to the decoder's
	// where the whole-file decoder would have found them.
	errs []*FieldError
	// bad says the file is not one the stream may take: decode it whole.
	bad      bool
	consumed bool
	// cuts counts the segments after the first (see tokenize); atCut says
	// the next token starts one; last is the type of the last token other
	// than a comment.
	cuts          int
	atCut         bool
	last          token.Type
	lastMultiLine bool // see multiLine
}

func newJobStream(d *decoder, chunkSize int) *jobStream {
	return &jobStream{d: d, chunkSize: chunkSize}
}

// streamed reports whether any entries were taken out of the skeleton.
func (s *jobStream) streamed() bool { return s != nil && s.marker != nil }

// active reports whether the stream changed how the file was tokenized or
// parsed: then any problem with it means decoding it whole.
func (s *jobStream) active() bool { return s.streamed() || s != nil && s.cuts > 0 }

// usable reports whether the stream's work may stand for decoding the file
// whole.
func (s *jobStream) usable() bool { return s == nil || !s.bad }

// cut notes that the next token was scanned by a new scanner, from the
// start of a line where jobCuts expects the next entry of the list.
func (s *jobStream) cut() {
	s.cuts++
	s.atCut = true
}

// checkCut reports whether tk, the first token of a new segment, shows that
// the whole file's scanner would have been between two entries there, in
// the state a new scanner starts in: in the list, no flow collection open,
// and not right after a block scalar's header (whose end the new segment
// would decide), tk a '-' starting an entry.
func (s *jobStream) checkCut(tk *token.Token, flow int) bool {
	s.atCut = false
	return s.state == inJobs && flow == 0 && tk.Type == token.SequenceEntryType &&
		tk.Position.Column == s.col && tk.Position.Line > s.line &&
		s.last != token.LiteralType && s.last != token.FoldedType && !s.lastMultiLine
}

// multiLine reports whether tk is a scalar written over several lines (its
// text, less the whitespace after it, has a line break): the scanner gives
// such a scalar at the end of its text the position of its end instead of
// its start, so a segment must not end with one. A block scalar's text is
// the exception: its position is never used, the header's is.
func multiLine(tk *token.Token) bool {
	return strings.ContainsAny(strings.TrimRight(tk.Origin, " \t\r\n"), "\r\n")
}

// giveUp stops streaming: before the list it just keeps every token in the
// skeleton; once entries were taken, or the file was cut, it must be decoded
// whole.
func (s *jobStream) giveUp() {
	if s.active() {
		s.bad = true
	}
	s.state = afterJobs
}

func (s *jobStream) add(tk *token.Token, flow int) {
	if s.bad {
		return
	}
	if tk.Type == token.CommentType { // the parser drops comments
		if s.state != inJobs {
			s.skeleton.Add(tk)
		}
		return
	}
	if tk.Position == nil {
		s.giveUp()
		s.skeleton.Add(tk)
		return
	}
	if s.atCut && !s.checkCut(tk, flow) {
		s.bad = true
		return
	}
	// A block scalar's text is the token after its header, with a
	// position of its own (column 0 when more follows): it is part of the
	// entry whatever its position.
	prev := s.last
	blockText := prev == token.LiteralType || prev == token.FoldedType
	s.last, s.lastMultiLine = tk.Type, !blockText && multiLine(tk)
	lineStart := tk.Position.Line > s.line && !blockText
	first := !s.seen
	s.seen, s.line = true, tk.Position.Line
	switch tk.Type {
	case token.DocumentHeaderType:
		if !first {
			s.giveUp()
		}
	case token.DocumentEndType, token.DirectiveType, token.MappingKeyType:
		s.giveUp()
	}
	if s.bad {
		return
	}
	if s.state == inJobs {
		s.addEntryToken(tk, flow, lineStart, prev)
		return
	}
	s.seek(tk, flow, lineStart)
}

// seek follows the tokens before the list, looking for "jobs:" and the
// first '-' of its block list.
func (s *jobStream) seek(tk *token.Token, flow int, lineStart bool) {
	switch s.state {
	case seekJobsKey:
		if lineStart && flow == 0 && tk.Position.Column == 1 && isKeyToken(tk) && tk.Value == "jobs" {
			s.state = sawJobsKey
		}
	case sawJobsKey:
		if tk.Type != token.MappingValueType || lineStart {
			s.giveUp()
		} else {
			s.state = sawJobsColon
		}
	case sawJobsColon:
		if tk.Type != token.SequenceEntryType || !lineStart || flow != 0 {
			s.giveUp()
			break
		}
		s.state, s.col = inJobs, tk.Position.Column
		marker := *tk
		marker.Prev, marker.Next = nil, nil
		s.marker = &marker
		// "- null": without a value of its own, an entry at column 1 would
		// take the next top-level key as its value.
		pos := *tk.Position
		pos.Column += 2
		s.skeleton.Add(s.marker, token.New("null", "null", &pos))
		s.chunk.Add(tk)
		s.entries = 1
		return
	}
	s.skeleton.Add(tk)
}

// addEntryToken takes a token of the list: a new entry, the end of the
// list, or part of an entry. prev is the type of the token before it.
func (s *jobStream) addEntryToken(tk *token.Token, flow int, lineStart bool, prev token.Type) {
	switch tk.Type {
	case token.AnchorType, token.AliasType, token.TagType, token.MergeKeyType:
		s.giveUp()
		return
	}
	col := tk.Position.Column
	switch {
	case !lineStart || col > s.col:
		s.chunk.Add(tk)
	case flow != 0:
		s.giveUp()
	case col == s.col && tk.Type == token.SequenceEntryType:
		if s.entries == s.chunkSize {
			s.flush()
		}
		s.chunk.Add(tk)
		s.entries++
	case col == 1 && prev == token.SequenceEntryType:
		// "-" alone, then a key at its column: the parser takes the key
		// as the entry's value.
		s.giveUp()
	case col == 1:
		s.flush()
		s.state = afterJobs
		s.skeleton.Add(tk)
	default:
		s.giveUp()
	}
}

// isKeyToken reports whether tk is a scalar that can be a plain mapping key.
func isKeyToken(tk *token.Token) bool {
	switch tk.Type {
	case token.StringType, token.SingleQuoteType, token.DoubleQuoteType:
		return true
	}
	return false
}

// flush parses the pending entries as a list of their own and decodes them.
func (s *jobStream) flush() {
	if s.bad || s.entries == 0 {
		return
	}
	tokens, entries := s.chunk, s.entries
	s.chunk, s.entries = nil, 0
	tokens[0].Prev, tokens[len(tokens)-1].Next = nil, nil
	f, err := parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
	if err != nil || len(f.Docs) != 1 {
		s.giveUp()
		return
	}
	seq, ok := f.Docs[0].Body.(*ast.SequenceNode)
	if !ok || len(seq.Values) != entries {
		s.giveUp()
		return
	}
	for i := range seq.Values {
		s.jobs = append(s.jobs, s.d.job(seq, i, "jobs", len(s.jobs)))
	}
}

// end flushes the last entries and returns the skeleton's tokens. The
// problems found in the jobs so far are set aside for take.
func (s *jobStream) end() token.Tokens {
	if s.state == inJobs {
		s.flush()
	}
	if s.streamed() {
		s.errs, s.d.errs = s.d.errs, nil
	}
	if s.atCut { // a cut at the end of the file
		s.bad = true
	}
	return s.skeleton
}

// take reports whether seq is the skeleton's stand-in for the streamed
// list, decoded at path; then the decoder uses jobs and errs instead.
func (s *jobStream) take(n ast.Node, path string) bool {
	if !s.streamed() || s.bad {
		return false
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok || seq.Start != s.marker || len(seq.Values) != 1 || !isNull(seq.Values[0]) || path != "jobs" {
		return false
	}
	s.consumed = true
	s.d.errs = append(s.d.errs, s.errs...)
	return true
}

// jobCuts returns where tokenize may cut data into segments: the starts of
// every chunkSize-th entry line of the top-level jobs list, found in the
// text. An entry line is one that starts with the first entry's
// indentation (spaces) and "- " (or "-" alone); the text after a plain
// "jobs:" line at column 1 is searched, until a line that starts at column
// 1 and is neither an entry nor a comment. The tokens then show whether a
// cut was where the text suggests (jobStream.checkCut); none when the file
// does not start its list this way, or has a carriage return or a tab
// anywhere.
func jobCuts(data []byte, chunkSize int) []int {
	if bytes.ContainsAny(data, "\r\t") {
		// The scanner counts lines after a '\r' its own way, and a tab,
		// even in a quoted string, changes how it reads the lines after.
		return nil
	}
	var cuts []int
	found := false
	indent, entries := 0, 0
	for pos := 0; pos < len(data); {
		start := pos
		if n := bytes.IndexByte(data[pos:], '\n'); n >= 0 {
			pos += n + 1
		} else {
			pos = len(data)
		}
		text := bytes.TrimRight(data[start:pos], " \t\r\n")
		if !found {
			found = bytes.Equal(text, []byte("jobs:"))
			continue
		}
		trimmed := bytes.TrimLeft(text, " ")
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		spaces := len(text) - len(trimmed)
		entry := trimmed[0] == '-' && (len(trimmed) == 1 || trimmed[1] == ' ')
		if entries == 0 {
			if !entry {
				return nil
			}
			indent = spaces
		}
		switch {
		case entry && spaces == indent:
			if entries > 0 && entries%chunkSize == 0 {
				cuts = append(cuts, start)
			}
			entries++
		case spaces == 0:
			return cuts
		}
	}
	return cuts
}
