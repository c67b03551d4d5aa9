package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/scanner"
	"github.com/goccy/go-yaml/token"
)

// MaxFileSize caps the configuration file: a larger one is rejected before
// it is parsed. The YAML parser needs about a hundred times a file's size in
// memory for what it parses at once (the 100,000-job file of 6.2 MB took
// some 700 MB when parsed whole; its jobs list is now parsed a chunk at a
// time, see jobstream.go, but an unusual list is still parsed whole), so a
// runaway file must not reach it; 64 MiB is ten times that largest known
// configuration.
const MaxFileSize = 64 << 20

// MaxDepth caps how deeply lists and mappings nest in the file (block and
// flow collections alike, counted together). The deepest place in a real
// configuration (jobs[0].notify[0].headers) is four levels; the YAML
// parser's cost grows with the square of the depth (20,000 levels of
// "[[[..." in 40 KB took 664 MB to reject), so a file nested deeper than
// this is rejected while it is tokenized, before the parser sees it.
const MaxDepth = 64

// Problems with the file as a whole rather than one of its fields: the
// *FieldError of such a rejection wraps one of these (errors.Is).
var (
	ErrFileTooLarge = fmt.Errorf("file larger than %d MiB", MaxFileSize>>20)
	ErrTooDeep      = fmt.Errorf("nested deeper than %d levels", MaxDepth)
)

// ReadFile reads the configuration file at path, reading no more than
// MaxFileSize+1 bytes of it: a larger file is an error wrapping
// ErrFileTooLarge, a *FieldError naming the file. Load reads through it,
// and so must anything else that reads the file to parse it.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileSize {
		return nil, tooLarge(path)
	}
	// Not a regular file, or one that grows: read no more than the limit.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := checkSize(path, data); err != nil {
		return nil, err
	}
	return data, nil
}

func checkSize(file string, data []byte) error {
	if len(data) <= MaxFileSize {
		return nil
	}
	return tooLarge(file)
}

func tooLarge(file string) error {
	return &FieldError{File: file, Msg: fmt.Sprintf("the file is too large: %v (MaxFileSize); split it or shorten it", ErrFileTooLarge),
		err: ErrFileTooLarge}
}

// tokenSink receives the tokens of the file in order, with the number of
// flow collections open after each: a plain token list, or a jobStream.
type tokenSink interface {
	add(tk *token.Token, flow int)
	// cut says the next token starts a new segment of the file (see
	// tokenize), scanned by a scanner of its own.
	cut()
}

// tokenList is the tokenSink that keeps every token.
type tokenList struct{ tokens token.Tokens }

func (l *tokenList) add(tk *token.Token, _ int) { l.tokens.Add(tk) }

func (l *tokenList) cut() {}

// tokenize runs goccy's scanner as lexer.Tokenize does, handing each token
// to out, and also measures the nesting depth as it goes and stops at the
// first token deeper than MaxDepth, returning an error at that token's
// line. Measuring the lexer's own tokens, rather than the raw text, means
// brackets inside quoted strings, block scalars and comments are not
// counted, exactly as the parser sees them.
//
// The scanner returns all of a text's tokens at once, so cuts (increasing
// byte offsets of line starts in src, see jobCuts) split src into segments
// that are scanned one after the other, their tokens' positions moved to
// where they are in src; out checks that each cut fell where the scanner
// was between two entries of the jobs list (jobStream.cut).
func tokenize(file string, src string, cuts []int, out tokenSink) error {
	var depth depthMeter
	var at segmentStart
	for i := 0; i <= len(cuts); i++ {
		end := len(src)
		if i < len(cuts) {
			end = cuts[i]
		}
		if i > 0 {
			out.cut()
		}
		if err := tokenizeSegment(file, src[at.offset:end], at, &depth, out); err != nil {
			return err
		}
		at = at.after(src[at.offset:end])
	}
	return nil
}

// segmentStart is where a segment starts in the file: its byte offset, and
// the line and rune offset that its scanner's positions are moved by.
type segmentStart struct{ offset, lines, runes int }

func (a segmentStart) after(seg string) segmentStart {
	return segmentStart{offset: a.offset + len(seg), lines: a.lines + strings.Count(seg, "\n"),
		runes: a.runes + utf8.RuneCountInString(seg)}
}

// tokenizeSegment scans one segment of the file, starting at at.
func tokenizeSegment(file, seg string, at segmentStart, depth *depthMeter, out tokenSink) error {
	var s scanner.Scanner
	s.Init(seg)
	moved := map[*token.Position]bool{}
	for {
		sub, err := s.Scan()
		if errors.Is(err, io.EOF) {
			return nil
		}
		for i, tk := range sub {
			if p := tk.Position; p != nil && at.offset > 0 && !moved[p] {
				p.Line += at.lines
				p.Offset += at.runes
				moved[p] = true
			}
			if !depth.add(tk) {
				return &FieldError{File: file, Line: tk.Position.Line,
					Msg: fmt.Sprintf("%v (lists and mappings inside each other, or tags and anchors in a row); "+
						"no configuration needs that many: write the value out flatter", ErrTooDeep),
					err: ErrTooDeep}
			}
			out.add(tk, depth.flow)
			sub[i] = nil // let the decoded entries' tokens go
		}
	}
}

// blockLevel is an open block collection: the column of its entries and
// whether it is a list ('-') or a mapping (':' or '?').
type blockLevel struct {
	col  int
	list bool
}

// depthMeter follows the nesting of block collections by the columns of
// their entries, as the parser does, and that of flow collections by their
// brackets. A flow collection nests inside the block entry it is written
// in, so the depth is the number of open block levels plus open brackets.
type depthMeter struct {
	block []blockLevel
	flow  int
	// line is the line of the last token seen, and keyCol the column of
	// the first token after the last block indicator on it (0: none yet):
	// where a mapping key starts when a ':' follows.
	line, keyCol int
	// props counts the node properties (tags, anchors) in a row: the
	// parser nests one node per property and its time grows with the
	// square of a run of them, so a run counts as that many levels.
	props      int
	anchorName bool // the last token was '&': the next one is its name
}

// add takes the next token and reports whether the depth is still within
// MaxDepth.
func (m *depthMeter) add(tk *token.Token) bool {
	if tk.Position == nil || tk.Type == token.CommentType {
		return true
	}
	if tk.Position.Line != m.line {
		m.line, m.keyCol = tk.Position.Line, 0
	}
	col := tk.Position.Column
	switch {
	case tk.Type == token.TagType || tk.Type == token.AnchorType:
		m.props++
		m.anchorName = tk.Type == token.AnchorType
	case m.anchorName:
		m.anchorName = false
	default:
		m.props = 0
	}
	if m.props > MaxDepth {
		return false
	}
	switch tk.Type {
	case token.DocumentHeaderType, token.DocumentEndType:
		m.block, m.flow = m.block[:0], 0
	case token.SequenceStartType, token.MappingStartType:
		m.flow++
	case token.SequenceEndType, token.MappingEndType:
		m.flow = max(m.flow-1, 0)
	}
	if m.flow > 0 || tk.Type == token.SequenceEndType || tk.Type == token.MappingEndType {
		if m.keyCol == 0 && (tk.Type == token.SequenceStartType || tk.Type == token.MappingStartType) && m.flow == 1 {
			m.keyCol = col // a flow collection as a mapping key
		}
		return len(m.block)+m.flow <= MaxDepth
	}
	switch tk.Type {
	case token.SequenceEntryType:
		m.enter(col, true)
		m.keyCol = 0
	case token.MappingKeyType:
		m.enter(col, false)
		m.keyCol = 0
	case token.MappingValueType:
		if m.keyCol == 0 {
			m.keyCol = col // an empty key
		}
		m.enter(m.keyCol, false)
		m.keyCol = 0
	default:
		if m.keyCol == 0 {
			m.keyCol = col
		}
	}
	return len(m.block) <= MaxDepth
}

// enter opens, or continues, the block collection whose entry starts at
// col: deeper entries are closed; one at the same column is a sibling,
// except that a list may start at its mapping key's column ("key:\n- a").
func (m *depthMeter) enter(col int, list bool) {
	for n := len(m.block); n > 0; n = len(m.block) {
		top := m.block[n-1]
		if top.col < col {
			break
		}
		if top.col == col {
			if top.list == list {
				return
			}
			if list { // an indentless list in a mapping
				break
			}
		}
		m.block = m.block[:n-1]
	}
	m.block = append(m.block, blockLevel{col: col, list: list})
}
