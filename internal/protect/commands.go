package protect

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/syntax"

	"github.com/agent-sandbox/agent-sandbox/internal/gitconfig"
)

// codeStrings are the strings of content that its tool may run as
// commands: for git configuration the values of every setting that is not
// harmless (harmlessGitKey); for JSON and TOML every string at or below a
// code-running key (only those that start with e.Commands, when set).
func codeStrings(e Entry, content []byte) []string {
	var out []string
	if e.Format == FormatGit {
		entries, err := gitconfig.Parse(content)
		if err != nil {
			return nil
		}
		for _, c := range entries {
			if !harmlessGitKey(c) && !c.NoValue {
				out = append(out, c.Value)
			}
		}
		return out
	}
	doc, ok := DecodeDoc(e.Format, content)
	if !ok {
		return nil
	}
	var strs func(v any)
	strs = func(v any) {
		switch t := v.(type) {
		case string:
			if e.Commands == "" || strings.HasPrefix(t, e.Commands) {
				out = append(out, strings.TrimPrefix(t, e.Commands))
			}
		case map[string]any:
			for _, c := range t {
				strs(c)
			}
		case []any:
			for _, c := range t {
				strs(c)
			}
		case []map[string]any:
			for _, c := range t {
				strs(c)
			}
		}
	}
	for _, pat := range e.Keys {
		matchTree(doc, strings.Split(pat, "."), strs)
	}
	return out
}

// matchTree calls fn with each value of doc at a path matching segs ("*"
// matches any key or index).
func matchTree(v any, segs []string, fn func(any)) {
	if len(segs) == 0 {
		fn(v)
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if segs[0] == "*" {
			for _, c := range t {
				matchTree(c, segs[1:], fn)
			}
		} else if c, ok := t[segs[0]]; ok {
			matchTree(c, segs[1:], fn)
		}
	case []any:
		for _, c := range t {
			if segs[0] == "*" {
				matchTree(c, segs[1:], fn)
			}
		}
	case []map[string]any:
		for _, c := range t {
			if segs[0] == "*" {
				matchTree(c, segs[1:], fn)
			}
		}
	}
}

// maxCommandLen bounds the command lines read for the files they name.
const maxCommandLen = 8192

// commandFiles are the files a shell command line names: each word that
// is an absolute path, starts with ~/, $HOME/ or ${HOME}/, or with ./ or
// ../ (taken from base, where the tool runs the command), and the program
// word when it holds a slash. A word that is not plain text (other
// variables, command substitutions) names nothing known. The command
// runs those files: the agent must not change them either.
func commandFiles(cmd, base, home string) []string {
	if len(cmd) > maxCommandLen {
		return nil
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		for i, w := range call.Args {
			s, ok := plainWord(w, home)
			if !ok || s == "" {
				continue
			}
			switch {
			case strings.HasPrefix(s, "~/") && home != "":
				s = filepath.Join(home, s[2:])
			case filepath.IsAbs(s):
			case strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || (i == 0 && strings.Contains(s, "/") && !strings.Contains(s, ":")):
				s = filepath.Join(base, s)
			default:
				continue
			}
			out = append(out, filepath.Clean(s))
		}
		return true
	})
	return out
}

// plainWord is w's text when it is made only of literal parts, quoted
// literals and $HOME.
func plainWord(w *syntax.Word, home string) (string, bool) {
	var b strings.Builder
	var parts func(ps []syntax.WordPart) bool
	parts = func(ps []syntax.WordPart) bool {
		for _, p := range ps {
			switch t := p.(type) {
			case *syntax.Lit:
				b.WriteString(t.Value)
			case *syntax.SglQuoted:
				b.WriteString(t.Value)
			case *syntax.DblQuoted:
				if !parts(t.Parts) {
					return false
				}
			case *syntax.ParamExp:
				if t.Param == nil || t.Param.Value != "HOME" || home == "" || t.Exp != nil || t.Repl != nil || t.Slice != nil || t.Index != nil || t.Length || t.Excl {
					return false
				}
				b.WriteString(home)
			default:
				return false
			}
		}
		return true
	}
	if !parts(w.Parts) {
		return "", false
	}
	return b.String(), true
}

// commandEntries adds to the ledger the files named by the commands of
// the code-running settings of the entries so far, kept read-only.
func commandEntries(entries []Entry, base, home string, add func(Entry)) {
	for _, e := range entries {
		if e.Format == FormatOpaque || e.Missing {
			continue
		}
		b, err := readSmall(e.Path, maxConfigSize)
		if err != nil {
			continue
		}
		for _, cmd := range codeStrings(e, b) {
			for _, p := range commandFiles(cmd, base, home) {
				// A missing one is created empty and not executable,
				// which runs nothing, as nothing did.
				if st, err := os.Lstat(p); err != nil || st.Mode().IsRegular() {
					add(Entry{Path: p, Name: e.Name, Why: "a command in " + e.Path + " runs it", Guard: ReadOnly})
				}
			}
		}
	}
}

// readSmall reads the regular file at path (following symlinks, as the
// tools that read it do) when it holds at most limit bytes. It never
// blocks on a FIFO, and never reads more than limit+1 bytes of a file
// that claims to be small (a sparse file of gigabytes).
func readSmall(path string, limit int64) ([]byte, error) {
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
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, err
}
