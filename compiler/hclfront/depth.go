package hclfront

import (
	"bytes"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
)

// Nesting. The HCL parser recurses once per level of brackets, blocks
// and operators, and deep enough input exhausts the stack, so nesting is
// measured before parsing. Within an expression every opening bracket,
// brace, quote or template sequence and every operator counts as a level,
// since each may nest the parsed expression one deeper (1+1+1 is three
// levels deep); a comma, or a newline in a body or object, ends the
// expression and releases its levels.
//
// Only tokens measure this exactly, and lexing a large file a second time
// costs about a third of reading it; so a scan of the bytes bounds the
// nesting from above first, and the tokens are consulted only when that
// bound passes the limit or the scan meets something it does not read.

// tooDeep reports where src first nests deeper than tree.MaxNesting.
func tooDeep(filename string, src []byte) (pools.Pos, bool) {
	if bound, ok := depthBound(src); ok && bound <= tree.MaxNesting {
		return pools.Pos{}, false
	}
	_, at, over := tokenDepth(filename, src, tree.MaxNesting)
	return at, over
}

// level is an open bracket, brace, quote or template sequence, or the
// file's body (open 0), and the levels its current expression holds.
type level struct {
	open  hclsyntax.TokenType
	count int
}

// tokenDepth measures the nesting of src from its tokens: the deepest
// level reached, and where it first passed limit (it stops there).
func tokenDepth(filename string, src []byte, limit int) (deepest int, at pools.Pos, over bool) {
	toks, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	closes := map[hclsyntax.TokenType]hclsyntax.TokenType{
		hclsyntax.TokenCBrace:         hclsyntax.TokenOBrace,
		hclsyntax.TokenCBrack:         hclsyntax.TokenOBrack,
		hclsyntax.TokenCParen:         hclsyntax.TokenOParen,
		hclsyntax.TokenCQuote:         hclsyntax.TokenOQuote,
		hclsyntax.TokenCHeredoc:       hclsyntax.TokenOHeredoc,
		hclsyntax.TokenTemplateSeqEnd: hclsyntax.TokenTemplateInterp,
	}
	stack := []level{{}}
	depth := 0
	for _, t := range toks {
		top := &stack[len(stack)-1]
		switch t.Type {
		case hclsyntax.TokenIdent, hclsyntax.TokenNumberLit, hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit,
			hclsyntax.TokenComment, hclsyntax.TokenEOF:
			continue
		case hclsyntax.TokenComma:
			depth -= top.count
			top.count = 0
			continue
		case hclsyntax.TokenNewline:
			if top.open == 0 || top.open == hclsyntax.TokenOBrace {
				depth -= top.count
				top.count = 0
			}
			continue
		}
		if open, ok := closes[t.Type]; ok {
			// A template sequence ends alike after ${ and %{.
			if len(stack) > 1 && (top.open == open || open == hclsyntax.TokenTemplateInterp && top.open == hclsyntax.TokenTemplateControl) {
				depth -= top.count
				stack = stack[:len(stack)-1]
			}
			continue
		}
		top.count++
		depth++
		deepest = max(deepest, depth)
		if depth > limit {
			return deepest, rangePos(t.Range), true
		}
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			stack = append(stack, level{open: t.Type})
		}
	}
	return deepest, pools.Pos{}, false
}

// depthBound bounds from above, from the bytes alone, the deepest level
// tokenDepth would find, counting every punctuation byte in code as a
// level (an operator of two bytes counts twice). It reads plain HCL:
// code, line comments and quoted strings without template sequences. On
// anything else — a template sequence or its end (~} ends one even in
// code), a heredoc, a block comment, a string that does not end on its
// line, invalid UTF-8, a control byte or a byte past ASCII outside a
// string — it gives up (ok false).
func depthBound(src []byte) (bound int, ok bool) {
	if !mayBePlain(src) {
		return 0, false
	}
	const body, brace = 0, '{'
	stack := []level{{}}
	depth := 0
	release := func() {
		top := &stack[len(stack)-1]
		depth -= top.count
		top.count = 0
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == ' ' || c == '\t':
		case c == '\n' || c == '\r' && i+1 < len(src) && src[i+1] == '\n':
			if c == '\r' {
				i++ // "\r\n" is one newline
			}
			if open := stack[len(stack)-1].open; open == body || open == brace {
				release()
			}
		case c == ',':
			release()
		case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
			// A line comment runs through its newline, which it takes
			// with it: that newline releases nothing.
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"':
			end, ok := stringEnd(src, i+1)
			if !ok {
				return 0, false
			}
			// The quote is a level of its own, and holds none inside.
			stack[len(stack)-1].count++
			depth++
			bound = max(bound, depth)
			i = end
		case c == '{' || c == '[' || c == '(':
			stack[len(stack)-1].count++
			depth++
			bound = max(bound, depth)
			stack = append(stack, level{open: hclsyntax.TokenType(c)})
		case c == '}' || c == ']' || c == ')':
			if top := stack[len(stack)-1]; len(stack) > 1 && top.open == hclsyntax.TokenType(opener(c)) {
				depth -= top.count
				stack = stack[:len(stack)-1]
			}
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_':
		case c < ' ' || c > '~':
			return 0, false
		default: // an operator or other punctuation
			stack[len(stack)-1].count++
			depth++
			bound = max(bound, depth)
		}
	}
	return bound, true
}

// mayBePlain reports whether src holds none of what the byte scans do not
// read (depthBound, cut): a template sequence or its end, a heredoc, a
// block comment, invalid UTF-8. What else they give up on they find as
// they scan.
func mayBePlain(src []byte) bool {
	for _, tricky := range [][]byte{[]byte("${"), []byte("%{"), []byte("~}"), []byte("<<"), []byte("/*")} {
		if bytes.Contains(src, tricky) {
			return false
		}
	}
	return utf8.Valid(src)
}

// opener is the bracket that closer closes.
func opener(closer byte) byte {
	switch closer {
	case '}':
		return '{'
	case ']':
		return '['
	}
	return '('
}

// stringEnd finds the closing quote of a quoted string whose text starts
// at i, stepping over escapes. A string that meets a control byte (the
// lexer ends a string at a line break, even a lone carriage return) or the
// end of src is not read.
func stringEnd(src []byte, i int) (int, bool) {
	control := func(c byte) bool { return c < ' ' && c != '\t' }
	for ; i < len(src); i++ {
		switch c := src[i]; {
		case c == '\\':
			i++
			if i == len(src) || control(src[i]) {
				return 0, false
			}
		case control(c):
			return 0, false
		case c == '"':
			return i, true
		}
	}
	return 0, false
}
