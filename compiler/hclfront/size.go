package hclfront

import (
	"fmt"

	"poolc.dev/poolc/compiler/numlit"
	"poolc.dev/poolc/pools"
)

// Size. hashicorp/hcl's parser spends about a kilobyte for each token it
// reads (a 15 MiB pool of 3.9 million tokens peaks at 1.7 GB), and some
// inputs cost it far more: a heredoc takes time quadratic in its lines
// (25,000 lines took 18 s). A file of 15 MB of "1," or of `${"a"}` is
// 15 million tokens, past any memory a pool should need. So before the
// parser sees a file, one pass over its bytes counts its tokens from
// above and refuses heredocs, which can never hold a pool's value (every
// one ends in a line break, which no string field allows).

// MaxTokens is the most tokens, counted by countTokens, one HCL file may
// hold: the 15 MiB pool of 8,000 nodes and 82,000 lanes has 3,934,554 (the
// lexer's count too).
const MaxTokens = 4_500_000

// Why countTokens stopped before the end.
const (
	stopHeredoc = "heredoc"
	stopNumber  = "number"
)

// tooBig reports the first reason to refuse src before parsing it: a
// heredoc, at its "<<", a number literal longer than numlit.MaxLength, or
// more than limit tokens, where the count passed it.
func tooBig(filename string, src []byte, limit int) *pools.Diagnostic {
	n, at, stop := countTokens(src, limit)
	p := offsetPos(filename, src, at)
	switch {
	case stop == stopHeredoc:
		return &pools.Diagnostic{Code: "heredoc", Pos: p,
			Message: "heredocs are not read: a heredoc's value ends in a line break, which no pool value holds; write a quoted string"}
	case stop == stopNumber:
		end := at
		for end < len(src) && isWord(src[end]) {
			end++
		}
		return &pools.Diagnostic{Code: "too-large", Pos: p, Message: numlit.TooLong(string(src[at:end])).Error()}
	case n > limit:
		return &pools.Diagnostic{Code: "too-large", Pos: p,
			Message: fmt.Sprintf("the file holds more than %s tokens (values, names and punctuation), the most poolc reads from one HCL file; a pool that large is best split into files", pools.Num(float64(limit)))}
	}
	return nil
}

// countTokens counts the tokens of src from above, the way the HCL lexer
// cuts them: a run of name or number bytes is one, a quoted string three
// (its quotes and its text) plus what its template sequences hold, a
// comment one, every other byte but spaces one. It stops at the token
// that passes limit, at a heredoc ("<<" in code) or at a number longer
// than numlit.MaxLength, and returns the count, the byte offset where it
// stopped and, when it stopped for a heredoc or a number, which.
func countTokens(src []byte, limit int) (n, at int, stop string) {
	// modes holds, for each open template sequence, the depth of braces
	// opened inside it: a "}" at depth 0 ends the sequence and returns to
	// the string around it.
	var modes []int
	inString := false
	for i := 0; i < len(src); i++ {
		if n > limit {
			return n, i, ""
		}
		c := src[i]
		if inString {
			switch {
			case c == '\\' && i+1 < len(src):
				i++
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == c && i+2 < len(src) && src[i+2] == '{':
				i += 2 // $${ and %%{ are literal
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				n += 2 // the sequence's opening, and the literal after it
				i++
				modes = append(modes, 0)
				inString = false
			case c == '"':
				inString = false
			case c == '\n':
				inString = false // the lexer ends a quoted string at a line break
				n++
			}
			continue
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r':
		case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			n += 2 // the comment and its line break
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			start := i
			for i += 2; i+1 < len(src) && !(src[i] == '*' && src[i+1] == '/'); i++ {
			}
			i++
			n++
			if i >= len(src) {
				return n, start, ""
			}
		case c == '<' && i+1 < len(src) && src[i+1] == '<':
			return n, i, stopHeredoc
		case c == '"':
			n += 3
			inString = true
		case c == '{' && len(modes) > 0:
			modes[len(modes)-1]++
			n++
		case c == '}' && len(modes) > 0:
			n++
			if modes[len(modes)-1] == 0 {
				modes = modes[:len(modes)-1]
				inString = true
			} else {
				modes[len(modes)-1]--
			}
		case isWord(c):
			start := i
			for i+1 < len(src) && isWord(src[i+1]) {
				i++
			}
			if '0' <= c && c <= '9' && i+1-start > numlit.MaxLength {
				return n, start, stopNumber
			}
			n++
		default:
			n++
		}
	}
	return n, len(src), ""
}

// isWord reports whether c belongs to a name or a number.
func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c >= 0x80
}

// offsetPos is the line and column of byte offset off of src, counting
// columns in characters as HCL does.
func offsetPos(filename string, src []byte, off int) pools.Pos {
	line, col := 1, 1
	for i := 0; i < off && i < len(src); i++ {
		switch {
		case src[i] == '\n':
			line, col = line+1, 1
		case src[i]&0xC0 != 0x80:
			col++
		}
	}
	return pools.Pos{File: filename, Line: line, Col: col}
}
