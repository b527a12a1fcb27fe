// Package gitconfig reads git configuration files with git's own grammar,
// so that agent-sandbox sees exactly the settings git will act on: what a
// repository's config, config.worktree, the user's ~/.gitconfig or
// /etc/gitconfig make git execute or read from elsewhere (core.hooksPath,
// include.path, includeIf.<condition>.path, core.fsmonitor, ...).
//
// It owns the file syntax and nothing above it: [Parse] turns a file's bytes
// into [Entry] values in file order, the way git 2.39's config.c does
// (comments, quoting, escapes, line continuations, CRLF line ends, a UTF-8
// byte order mark, subsections and the deprecated [section.subsection]
// form), and fails on exactly the files git refuses, at the line git names
// ("bad config line N"). [ExpandPath] resolves a path-valued setting as git
// does. Following includes, deciding which includeIf conditions hold and
// what a setting means are the caller's.
//
// Parse is a transcription of git's parser (get_next_char, parse_value,
// get_value, get_base_var, get_extended_base_var, git_parse_source), and the
// tests compare it with the real `git config --list` on tricky and fuzzed
// files. Parse refuses a file past 2 GiB (git stops reading at INT_MAX
// bytes).
package gitconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"syscall"
)

// Entry is one variable of a config file, in file order.
//
// Git knows a variable by its name string alone (section, subsection and
// key joined by dots; see [Entry.Name]), and C strings end at a NUL byte: a
// NUL inside a quoted subsection cuts the name there, so that
// `[core "hookspath<NUL>"] x = /p` sets core.hookspath for git. The fields
// below are the parts of the name git sees, split as git splits a name it
// looks up: Section before the first dot, Key after the last one,
// Subsection between them.
type Entry struct {
	// Section is lower-cased, as git compares it.
	Section string
	// Subsection is exact (case-sensitive) for [section "sub"], lower-cased
	// for the deprecated [section.sub].
	Subsection string
	// HasSub says the name has a subsection (possibly empty: [section ""]).
	HasSub bool
	// Key is the lower-cased variable name. Only a name cut by a NUL can
	// leave a key with upper-case letters (then no lookup matches it, as
	// in git).
	Key string
	// Value is unescaped, comments and surrounding blanks removed, quotes
	// resolved, cut at the first NUL byte (as git's C strings are).
	Value string
	// NoValue is true for "key" with no "=": a boolean true, which `git
	// config --list` prints with no "=value". Value is then "".
	NoValue bool
	// Line is the 1-based line where the entry's key starts.
	Line int

	// name is the name exactly as git builds it; "" in an Entry not made
	// by Parse, whose name comes from the fields.
	name string
}

// Name is the entry's name as `git config --list` prints it and git looks
// it up: section[.subsection].key, or just key for a variable that comes
// before any section header.
func (e Entry) Name() string {
	if e.name != "" {
		return e.name
	}
	if e.Section == "" && !e.HasSub {
		return e.Key
	}
	if e.HasSub {
		return e.Section + "." + e.Subsection + "." + e.Key
	}
	return e.Section + "." + e.Key
}

// Is says whether the entry is the variable name, compared as git compares
// names: section and key case-insensitively, the subsection exactly. name
// is written as `git config` takes it: "core.hooksPath",
// "includeIf.gitdir:~/work/.path". A name without a dot is never matched
// (git refuses to look it up), though a variable before any section
// header is named so.
func (e Entry) Is(name string) bool {
	return e.Name() == canonical(name)
}

// Get returns the values of the variable name (see [Entry.Is]) in file
// order; "" for an entry without "=" ([Entry.NoValue]). For a single-valued
// setting git uses the last one.
func Get(entries []Entry, name string) []string {
	c := canonical(name)
	var out []string
	for _, e := range entries {
		if e.Name() == c {
			out = append(out, e.Value)
		}
	}
	return out
}

// Last returns the last entry of the variable name (see [Entry.Is]): the
// one git uses for a single-valued setting. ok is false when there is none.
func Last(entries []Entry, name string) (e Entry, ok bool) {
	c := canonical(name)
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Name() == c {
			return entries[i], true
		}
	}
	return Entry{}, false
}

// canonical lower-cases the section (before the first dot) and the key
// (after the last dot) of name, as git_config_parse_key does for a lookup.
// A name without a dot matches nothing ("", which no entry is named): git
// refuses it ("key does not contain a section").
func canonical(name string) string {
	i := strings.IndexByte(name, '.')
	j := strings.LastIndexByte(name, '.')
	if i < 0 {
		return ""
	}
	return asciiLower(name[:i]) + name[i:j] + asciiLower(name[j:])
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for k := i; k < len(b); k++ {
				b[k] = lower(b[k])
			}
			return string(b)
		}
	}
	return s
}

// newEntry splits name as git splits a name it looks up.
func newEntry(name, value string, noValue bool, line int) Entry {
	e := Entry{Value: value, NoValue: noValue, Line: line, name: name}
	i := strings.IndexByte(name, '.')
	j := strings.LastIndexByte(name, '.')
	switch {
	case i < 0:
		e.Key = name
	case i == j:
		e.Section, e.Key = name[:i], name[i+1:]
	default:
		e.Section, e.Subsection, e.Key = name[:i], name[i+1:j], name[j+1:]
		e.HasSub = true
	}
	return e
}

// SyntaxError is a file git refuses to read ("bad config line N").
type SyntaxError struct {
	// File is the file's path; "" when [Parse] was given bytes.
	File string
	// Line is the line git names in its error.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error says where and what: "path:3: unterminated quoted value ...", or
// "line 3: ..." without a file.
func (e *SyntaxError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ReadFile reads and parses the config file at path, refusing one larger
// than limit bytes and one that is not a regular file (a FIFO would block
// the reader). It follows symbolic links, as git does. A syntax error is a
// *[SyntaxError] naming path.
func ReadFile(path string, limit int64) ([]Entry, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("git config %s: not a regular file (%s)", path, st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading git config %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("git config %s: larger than %d bytes", path, limit)
	}
	entries, err := Parse(b)
	if se, ok := err.(*SyntaxError); ok {
		se.File = path
	}
	return entries, err
}

// Parse parses a config file's bytes. It fails exactly where git fails,
// with a *[SyntaxError] naming the line git names; the entries before that
// line are returned with the error (`git config --list` prints them before
// it dies).
func Parse(data []byte) ([]Entry, error) {
	if len(data) > math.MaxInt32 {
		return nil, errors.New("git config larger than 2 GiB: git stops reading there")
	}
	p := parser{data: data, line: 1}
	// Names and values go into one string; a value is seldom longer than
	// its line.
	p.strs.Grow(len(data))
	// An entry ends its line: there are at most as many as lines, and
	// most lines of a config file are entries.
	p.entries = make([]Entry, 0, bytes.Count(data, []byte{'\n'})*2/3+1)
	if msg := p.parse(); msg != "" {
		return p.entries, &SyntaxError{Line: p.line, Msg: msg}
	}
	return p.entries, nil
}

// parser holds git's config_source state: the input, git's line counter
// (linenr, which also counts every read at the end of the file) and the
// name and value being built.
type parser struct {
	data []byte
	pos  int
	line int
	eof  bool
	name []byte
	val  []byte

	// strs holds the names and values of the entries: each entry's
	// strings are slices of strs.String(), which stay valid as it grows.
	strs    strings.Builder
	entries []Entry
}

// next is git's get_next_char: "\r\n" reads as '\n', and the end of the
// file reads as '\n' with eof set (each time, counting a line each time).
func (p *parser) next() byte {
	if p.pos >= len(p.data) {
		p.eof = true
		p.line++
		return '\n'
	}
	c := p.data[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.data) && p.data[p.pos] == '\n' {
		p.pos++
		c = '\n'
	}
	if c == '\n' {
		p.line++
	}
	return c
}

// isSpace, isAlpha and isKeyChar are git's sane_ctype classes: ASCII
// only, and space is only ' ', '\t', '\n' and '\r' (not '\v' or '\f').
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func isAlpha(c byte) bool {
	return 'a' <= c|0x20 && c|0x20 <= 'z'
}

func isKeyChar(c byte) bool {
	return isAlpha(c) || '0' <= c && c <= '9' || c == '-'
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// quote shows a byte in an error message.
func quote(c byte, eof bool) string {
	switch {
	case eof:
		return "the end of the file"
	case c == '\n':
		return "the end of the line"
	}
	return fmt.Sprintf("%q", string([]byte{c}))
}

// shorten quotes a name for an error message, cut if long.
func shorten(b []byte) string {
	if len(b) > 60 {
		return fmt.Sprintf("%q...", b[:60])
	}
	return fmt.Sprintf("%q", b)
}

const utf8BOM = "\xef\xbb\xbf"

// parse is git_parse_source. It records the entries read and returns,
// when git would fail, what is wrong (p.line is then the line git names).
func (p *parser) parse() string {
	// Git skips a whole UTF-8 BOM and refuses a partial one.
	if len(p.data) > 0 && p.data[0] == utf8BOM[0] {
		for i := 0; i < len(utf8BOM); i++ {
			if p.next() != utf8BOM[i] {
				return "incomplete UTF-8 byte order mark at the start of the file"
			}
		}
	}
	comment := false
	baselen := 0
	for {
		c := p.next()
		if c == '\n' {
			if p.eof {
				return ""
			}
			comment = false
			continue
		}
		if comment || isSpace(c) {
			continue
		}
		if c == '#' || c == ';' {
			comment = true
			p.skipLine()
			continue
		}
		if c == '[' {
			p.name = p.name[:0]
			if msg := p.baseVar(); msg != "" {
				return msg
			}
			if len(p.name) == 0 {
				return "empty section name"
			}
			p.name = append(p.name, '.')
			baselen = len(p.name)
			continue
		}
		if !isAlpha(c) {
			return fmt.Sprintf("%s cannot start a variable name, a section header or a comment", quote(c, false))
		}
		line := p.line
		p.name = append(p.name[:baselen], lower(c))
		if msg := p.entry(line); msg != "" {
			return msg
		}
	}
}

// entry is get_value: the rest of the variable name, then "= value" or
// the end of the line. It records the entry, which started at line.
func (p *parser) entry(line int) string {
	var c byte
	for {
		c = p.next()
		if p.eof || !isKeyChar(c) {
			break
		}
		p.name = append(p.name, lower(c))
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	noValue := c == '\n'
	if !noValue {
		if c != '=' {
			return fmt.Sprintf("variable name %s followed by %s, not '=' or the end of the line",
				shorten(p.name), quote(c, p.eof))
		}
		if msg := p.value(); msg != "" {
			return msg
		}
	}
	name := p.name
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	val := p.val
	if noValue {
		val = nil
	} else if i := bytes.IndexByte(val, 0); i >= 0 {
		val = val[:i]
	}
	start := p.strs.Len()
	p.strs.Write(name)
	p.strs.Write(val)
	all := p.strs.String()
	mid := start + len(name)
	p.entries = append(p.entries, newEntry(all[start:mid], all[mid:], noValue, line))
	return ""
}

// value is parse_value: it reads the value after '=' up to the end of the
// line into p.val.
func (p *parser) value() string {
	p.val = p.val[:0]
	quoted, comment := false, false
	space := 0
	for {
		c := p.next()
		if c == '\n' {
			if quoted {
				p.line--
				return "unterminated quoted value (a missing '\"')"
			}
			return ""
		}
		if comment {
			continue
		}
		if !quoted {
			if isSpace(c) {
				if len(p.val) > 0 {
					space++
				}
				continue
			}
			if c == ';' || c == '#' {
				comment = true
				p.skipLine()
				continue
			}
		}
		for ; space > 0; space-- {
			p.val = append(p.val, ' ')
		}
		switch c {
		case '\\':
			c = p.next()
			switch c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return fmt.Sprintf(`invalid escape in a value: '\' followed by %s (git knows \n \t \b \\ \" and '\' ending a line)`,
					quote(c, false))
			}
		case '"':
			quoted = !quoted
			continue
		default:
			// c and the plain bytes after it go in as they are.
			d, start, end, m := p.data, p.pos, p.pos, mode(quoted)
			for end < len(d) && plain[d[end]]&m != 0 {
				end++
			}
			p.pos = end
			p.val = append(p.val, c)
			p.val = append(p.val, d[start:end]...)
			continue
		}
		p.val = append(p.val, c)
	}
}

// plain classifies the bytes that parse_value copies as they are: bit
// plainQuoted inside quotes, bit plainBare outside. '\r' is left to next,
// which folds "\r\n".
var plain = func() (t [256]byte) {
	for c := range t {
		switch c {
		case '\r', '\n', '\\', '"':
		case ' ', '\t', ';', '#':
			t[c] = plainQuoted
		default:
			t[c] = plainQuoted | plainBare
		}
	}
	return t
}()

const (
	plainBare = 1 << iota
	plainQuoted
)

func mode(quoted bool) byte {
	if quoted {
		return plainQuoted
	}
	return plainBare
}

// skipLine moves to the end of the line (its '\n', or the end of the
// file): what a comment holds does not matter, and next counts the line.
func (p *parser) skipLine() {
	if i := bytes.IndexByte(p.data[p.pos:], '\n'); i >= 0 {
		p.pos += i
	} else {
		p.pos = len(p.data)
	}
}

// baseVar is get_base_var: the section name after '[', up to ']' or to
// the blank before a quoted subsection.
func (p *parser) baseVar() string {
	for {
		c := p.next()
		if p.eof {
			return "unterminated section header (a missing ']')"
		}
		if c == ']' {
			return ""
		}
		if isSpace(c) {
			return p.extendedBaseVar(c)
		}
		if !isKeyChar(c) && c != '.' {
			return fmt.Sprintf("invalid character %s in a section name", quote(c, false))
		}
		p.name = append(p.name, lower(c))
	}
}

// extendedBaseVar is get_extended_base_var: blanks, then the quoted
// subsection, then ']' right after its closing quote. c is the blank that
// ended the section name.
func (p *parser) extendedBaseVar(c byte) string {
	for {
		if c == '\n' {
			p.line--
			return "unterminated section header (a missing ']')"
		}
		c = p.next()
		if !isSpace(c) {
			break
		}
	}
	if c != '"' {
		return fmt.Sprintf("section header: %s after the section name, not '\"' (a quoted subsection) or ']'", quote(c, false))
	}
	p.name = append(p.name, '.')
	for {
		c := p.next()
		if c == '\n' {
			p.line--
			return "unterminated subsection name in a section header (a missing '\"')"
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			c = p.next()
			if c == '\n' {
				p.line--
				return "unterminated subsection name in a section header (a missing '\"')"
			}
		}
		p.name = append(p.name, c)
	}
	if c := p.next(); c != ']' {
		return fmt.Sprintf("section header: %s after the subsection's closing '\"', not ']'", quote(c, p.eof))
	}
	return ""
}
