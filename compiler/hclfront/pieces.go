package hclfront

import (
	"bytes"
	"runtime"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Pieces. hashicorp/hcl lexes a whole file into one slice of tokens
// before it parses any of it: a generated pool of 10,000 lanes is 480,000
// tokens of 96 bytes, a slice that append copies over and over as it
// grows, into fresh memory the garbage collector must then scan. So a
// large plain file is parsed in pieces of about pieceBytes instead, each
// a run of whole items of the file's body or of one large block's body,
// in parallel, and the pieces' syntax trees are joined into the tree the
// parser gives the whole file.
//
// A piece starts where a line starts (or right after a block's closing
// brace), so its start position is known from the bytes: every position
// in its tree is the one the whole file's tree holds. A file the byte scan
// does not read (where depthBound gives up), and a file with a piece
// holding any error, are parsed whole, so a file's diagnostics are always
// the parser's own.

// pieceBytes is about how many bytes of a file one piece holds; a file no
// larger than twice that is parsed whole.
const pieceBytes = 64 << 10

// parseBody parses src as hclsyntax.ParseConfig does and returns its body:
// in pieces when src is large and plain, else whole.
func parseBody(filename string, src []byte) (*hclsyntax.Body, hcl.Diagnostics) {
	if len(src) > 2*pieceBytes {
		if body, ok := parseInPieces(filename, src, pieceBytes); ok {
			return body, nil
		}
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	return f.Body.(*hclsyntax.Body), diags
}

// unit is a range of a file parsed on its own; it starts at line and
// col (at offset start).
type unit struct {
	start, end int
	line, col  int
	// header marks a block's header, parsed as the block with an empty
	// body; the units after it, up to the one with closes set, are its
	// body's pieces.
	header bool
	// closes, in the last piece of a block's body, is where the block's
	// closing brace is: its offset, line and column.
	closes             bool
	close, cline, ccol int
}

// parseInPieces parses src in pieces of about size bytes and joins them
// into the body hclsyntax.ParseConfig gives for src. It reports false,
// and src is to be parsed whole, when src is not plain HCL the byte scan
// reads, when no piece could be cut, or when a piece holds an error or an
// attribute set twice.
func parseInPieces(filename string, src []byte, size int) (*hclsyntax.Body, bool) {
	units, ok := cut(src, size)
	if !ok || len(units) < 2 {
		return nil, false
	}
	bodies := make([]*hclsyntax.Body, len(units))
	failed := make([]bool, len(units))
	parse := func(i int) {
		u := units[i]
		text := src[u.start:u.end]
		if u.header {
			text = append(bytes.Clone(text), "\n}"...)
		}
		f, diags := hclsyntax.ParseConfig(text, filename, hcl.Pos{Line: u.line, Column: u.col, Byte: u.start})
		bodies[i], failed[i] = f.Body.(*hclsyntax.Body), diags.HasErrors()
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(units)) {
		wg.Go(func() {
			for i := range next {
				parse(i)
			}
		})
	}
	for i := range units {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, f := range failed {
		if f {
			return nil, false
		}
	}
	return join(filename, units, bodies)
}

// join joins the pieces' bodies into the file's, as the parser builds it:
// attributes by name, blocks in source order, the ranges of the file's
// body from its first and last piece and those of a block cut in pieces
// from its braces. It reports false when an attribute is set twice, which
// the parser reports of the whole file.
func join(filename string, units []unit, bodies []*hclsyntax.Body) (*hclsyntax.Body, bool) {
	file := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}, Blocks: hclsyntax.Blocks{}}
	into := file // the body the next piece's items belong to
	var open *hclsyntax.Block
	for i, u := range units {
		b := bodies[i]
		if u.header {
			if len(b.Attributes) != 0 || len(b.Blocks) != 1 {
				return nil, false
			}
			open = b.Blocks[0]
			into = &hclsyntax.Body{Attributes: hclsyntax.Attributes{}, Blocks: hclsyntax.Blocks{}}
			open.Body = into
			file.Blocks = append(file.Blocks, open)
			continue
		}
		for name, a := range b.Attributes {
			if _, twice := into.Attributes[name]; twice {
				return nil, false
			}
			into.Attributes[name] = a
		}
		into.Blocks = append(into.Blocks, b.Blocks...)
		if u.closes {
			end := hcl.Pos{Line: u.cline, Column: u.ccol + 1, Byte: u.close + 1}
			open.CloseBraceRange = hcl.Range{Filename: filename,
				Start: hcl.Pos{Line: u.cline, Column: u.ccol, Byte: u.close}, End: end}
			into.SrcRange = hcl.RangeBetween(open.OpenBraceRange, open.CloseBraceRange)
			into.EndRange = hcl.Range{Filename: filename, Start: end, End: end}
			into, open = file, nil
		}
	}
	if open != nil {
		return nil, false
	}
	first, last := bodies[0], bodies[len(bodies)-1]
	file.SrcRange = hcl.RangeBetween(first.SrcRange, last.SrcRange)
	file.EndRange = last.EndRange
	return file, true
}

// cut scans the bytes of src and cuts it into units of about size bytes:
// runs of whole items of the file's body and, for each block of the
// file's body larger than size, its header, then runs of whole items of
// its body, the last ending where the line of its closing brace starts.
// The last unit always ends the file, if empty, so that the file body's
// end is its end. It reads plain HCL as depthBound does, and gives up (ok
// false) where depthBound does and on brackets that do not match. A block
// is cut only when its header is a name and labels on one line ending in
// "{" and its closing brace stands alone on its line; another stays whole
// in the unit being gathered.
func cut(src []byte, size int) (units []unit, ok bool) {
	if !mayBePlain(src) {
		return nil, false
	}
	// from is where a unit starts: its offset, line and column.
	type from struct{ start, line, col int }
	var (
		stack     []byte // the brackets open
		line      = 1
		lineStart = 0
		gather    = from{0, 1, 1} // the unit being gathered
		item      = gather        // the item of the file's body being read
		// While a block of the file's body is read: its units so far, and
		// the unit that was being gathered before it.
		block  []unit
		before from
	)
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' && i+1 < len(src) && src[i+1] == '\n':
		case c == '\n':
			line, lineStart = line+1, i+1
			switch {
			case len(stack) == 0:
				item = from{i + 1, line, 1}
				if i+1-gather.start >= size {
					units = append(units, unit{start: gather.start, end: i + 1, line: gather.line, col: gather.col})
					gather = item
				}
			case block != nil && len(stack) == 1 && i+1-gather.start >= size:
				block = append(block, unit{start: gather.start, end: i + 1, line: gather.line, col: gather.col})
				gather = from{i + 1, line, 1}
			}
		case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case c == '"':
			end, ok := stringEnd(src, i+1)
			if !ok {
				return nil, false
			}
			i = end
		case c == '{' || c == '[' || c == '(':
			if c == '{' && len(stack) == 0 && blockHeader(src[item.start:i]) {
				if eol, ok := emptyToEOL(src, i+1); ok {
					// Its body's first piece starts on the next line.
					block = []unit{{start: item.start, end: i + 1, line: item.line, col: 1, header: true}}
					before, gather = gather, from{eol + 1, line + 1, 1}
				}
			}
			stack = append(stack, c)
		case c == '}' || c == ']' || c == ')':
			if len(stack) == 0 || stack[len(stack)-1] != opener(c) {
				return nil, false // the parser reports it, of the whole file
			}
			stack = stack[:len(stack)-1]
			if len(stack) > 0 || block == nil {
				continue
			}
			header := block[0]
			_, eol := emptyToEOL(src, i+1)
			if i+1-header.start <= size || !blank(src[lineStart:i]) || !eol && i+1 < len(src) {
				// Small, or its brace shares its line: a part of the unit
				// gathered.
				block, gather = nil, before
				continue
			}
			if header.start > before.start {
				units = append(units, unit{start: before.start, end: header.start, line: before.line, col: before.col})
			}
			units = append(units, block...)
			units = append(units, unit{start: gather.start, end: lineStart, line: gather.line, col: gather.col,
				closes: true, close: i, cline: line, ccol: i - lineStart + 1})
			block, gather = nil, from{i + 1, line, i - lineStart + 2}
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_':
		case c < ' ' || c > '~':
			return nil, false
		}
	}
	if len(stack) != 0 {
		return nil, false
	}
	return append(units, unit{start: gather.start, end: len(src), line: gather.line, col: gather.col}), true
}

// blockHeader reports whether b, the start of a line up to a "{", may be
// a block's header: a name, then names, quoted strings and blanks. Its
// parse tells whether it is one.
func blockHeader(b []byte) bool {
	b = trimBlank(b)
	if len(b) == 0 || !('a' <= b[0] && b[0] <= 'z' || 'A' <= b[0] && b[0] <= 'Z' || b[0] == '_') {
		return false
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			end, ok := stringEnd(b, i+1)
			if !ok {
				return false
			}
			i = end
		case c == ' ' || c == '\t' || isWord(c) && c != '.':
		default:
			return false
		}
	}
	return true
}

// trimBlank drops the spaces and tabs that b starts with.
func trimBlank(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// blank reports whether b holds only spaces and tabs.
func blank(b []byte) bool { return len(trimBlank(b)) == 0 }

// emptyToEOL reports whether src from i holds nothing up to a line break
// but spaces, tabs and a line comment, and the offset of its "\n".
func emptyToEOL(src []byte, i int) (int, bool) {
	for ; i < len(src); i++ {
		switch c := src[i]; {
		case c == ' ' || c == '\t' || c == '\r' && i+1 < len(src) && src[i+1] == '\n':
		case c == '\n':
			return i, true
		case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
			if end := bytes.IndexByte(src[i:], '\n'); end >= 0 {
				return i + end, true
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}
