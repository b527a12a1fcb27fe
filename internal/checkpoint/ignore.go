package checkpoint

import (
	"path"
	"regexp"
	"strings"
)

// DefaultRules are the ignore patterns every checkpoint applies beside
// the tree's own: dependency trees that are rebuilt, not edited.
var DefaultRules = []string{"node_modules/"}

// rules are gitignore patterns, parsed minimally and without git: blank
// lines and comments are skipped, a negation ("!") is not applied (what
// it would keep is kept anyway when it is a file below the ignored-file
// cap), a trailing "/" matches directories only, a pattern with another
// "/" is anchored at the workdir, any other matches a name at any depth;
// "*", "?", "[...]" and "**" are git's. Only the workdir's own .gitignore
// and .git/info/exclude are read: a nested .gitignore is not applied.
type rules []rule

type rule struct {
	re      *regexp.Regexp
	dirOnly bool
	base    bool // matches the name, not the path
}

// MaxRules bounds the ignore patterns a checkpoint applies: each path is
// matched against every one, so a .gitignore of a megabyte of patterns
// (an agent can write one) made every checkpoint of a large tree take
// minutes. The patterns after the first MaxRules are not applied (what
// they would leave out is kept).
const MaxRules = 1000

// MaxDepth bounds how deep a checkpoint walks: the walk holds a
// descriptor for each level, and an agent can nest directories deeper
// than the process may open files (relative mkdir and chdir), which made
// every checkpoint, and so undo, fail with "too many open files". What
// lies deeper is left out, and named.
const MaxDepth = 512

// isPattern reports whether the ignore-file line l is a pattern (not a
// blank line, a comment or a negation, which parseRules skips).
func isPattern(l string) bool {
	l = strings.TrimRight(l, " \t\r")
	return l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "!") && strings.TrimRight(l, "/") != ""
}

func parseRules(lines []string) rules {
	var rs rules
	for _, l := range lines {
		if len(rs) == MaxRules {
			break
		}
		l = strings.TrimRight(l, " \t\r")
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "!") {
			continue
		}
		var r rule
		if strings.HasSuffix(l, "/") {
			r.dirOnly = true
			l = strings.TrimRight(l, "/")
		}
		if l == "" {
			continue
		}
		r.base = !strings.Contains(l, "/")
		l = strings.TrimPrefix(l, "/")
		re, err := regexp.Compile("^" + globRegexp(l) + "$")
		if err != nil {
			continue
		}
		r.re = re
		rs = append(rs, r)
	}
	return rs
}

// globRegexp turns a gitignore glob into a regular expression.
func globRegexp(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case strings.HasPrefix(g[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(g[i:], "/**") && i+3 == len(g):
			b.WriteString("(/.*)?")
			i += 2
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			j := strings.IndexByte(g[i:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := g[i+1 : i+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j
		case c == '\\' && i+1 < len(g):
			i++
			b.WriteString(regexp.QuoteMeta(string(g[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// ignored reports whether rel (a path relative to the workdir) matches.
func (rs rules) ignored(rel string, dir bool) bool {
	name := path.Base(rel)
	for _, r := range rs {
		if r.dirOnly && !dir {
			continue
		}
		if r.base && r.re.MatchString(name) || !r.base && r.re.MatchString(rel) {
			return true
		}
	}
	return false
}
