package sshx

import (
	"errors"
	"fmt"
	"strings"
)

// Quote returns s quoted for a POSIX shell so that the shell reads it back
// as exactly one word equal to s: the whole string is put between single
// quotes, inside which a POSIX shell treats every byte literally, and each
// single quote in s is written as '\” (close the quoted part, an escaped
// quote, reopen). It is the only quoting function of poolc's remote
// commands; a string containing a NUL byte cannot be passed through a shell
// at all, so Command refuses it before Quote is reached.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isPlainWord(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isPlainWord reports whether s is made only of bytes that no POSIX shell
// gives a meaning to in any position of a word, so it may go unquoted and
// remote commands stay readable in logs.
func isPlainWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_./:,+@%", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// ErrNUL is returned by Command for an argument holding a NUL byte, which a
// remote shell cannot receive in a command line.
var ErrNUL = errors.New("argument contains a NUL byte")

// Command joins argv into the command line a POSIX login shell on the remote
// host executes as exactly argv: every element is quoted with Quote. An empty
// argv or an argument with a NUL byte is refused.
func Command(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("empty command")
	}
	var b strings.Builder
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("argument %d: %w", i, ErrNUL)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Quote(a))
	}
	return b.String(), nil
}
