package diag

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// QuoteName is a path as a message shows one the agent may have chosen:
// as it is when it holds only printable characters that cannot be taken
// for the message's own words (no blank, quote, comma or backslash),
// quoted (control characters escaped) otherwise.
func QuoteName(p string) string {
	for _, r := range p {
		if !unicode.IsPrint(r) || r == ' ' || r == '"' || r == '\'' || r == '\\' || r == ',' || r == ';' || r == utf8.RuneError {
			return strconv.Quote(p)
		}
	}
	return p
}
