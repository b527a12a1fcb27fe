package protect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"

	"github.com/agent-sandbox/agent-sandbox/internal/gitconfig"
)

// CodeKeys are the settings of a file's content that run code or redirect
// its tool, keyed by where they stand (a JSON pointer for JSON and TOML;
// the ordinal and name of the entry for git configuration), each with its
// value as text. Two files whose CodeKeys are equal run the same code.
// ok is false when the content cannot be read in its format: then the
// whole file counts.
func CodeKeys(e Entry, content []byte) (keys map[string]string, ok bool) {
	if e.Format == FormatGit {
		return gitCodeKeys(content)
	}
	doc, ok := DecodeDoc(e.Format, content)
	if !ok {
		return nil, false
	}
	return treeKeys(doc, e.Keys, e.Commands), true
}

// DecodeDoc decodes a JSON (comments and trailing commas allowed) or TOML
// document into maps, slices and values (JSON numbers as json.Number). A
// document nested deeper than maxDepth is not decoded (ok false): the
// parsers recurse, and an agent's file of a million brackets must not
// crash agent-sandbox.
func DecodeDoc(f Format, content []byte) (any, bool) {
	if nesting(f, content) > maxDepth {
		return nil, false
	}
	switch f {
	case FormatJSON:
		// Parse aliases its input and Standardize rewrites it in place.
		v, err := hujson.Parse(append([]byte(nil), content...))
		if err != nil {
			return nil, false
		}
		v.Standardize()
		var doc any
		d := json.NewDecoder(bytes.NewReader(v.Pack()))
		d.UseNumber()
		if err := d.Decode(&doc); err != nil {
			return nil, false
		}
		return doc, true
	case FormatTOML:
		var doc map[string]any
		if _, err := toml.Decode(string(content), &doc); err != nil {
			return nil, false
		}
		return doc, true
	}
	return nil, false
}

// treeKeys collects, for each dotted pattern ("*" matches any key or
// index), the values at the paths matching it, as canonical JSON. With a
// commands prefix only the string values that start with it (at any depth
// below a match) count.
func treeKeys(doc any, patterns []string, commands string) map[string]string {
	out := map[string]string{}
	for _, pat := range patterns {
		var walk func(v any, segs []string, ptr string)
		walk = func(v any, segs []string, ptr string) {
			if len(segs) == 0 {
				collect(v, ptr, commands, out)
				return
			}
			switch t := v.(type) {
			case map[string]any:
				if segs[0] == "*" {
					for k, c := range t {
						walk(c, segs[1:], ptr+"/"+pointerEscape(k))
					}
				} else if c, ok := t[segs[0]]; ok {
					walk(c, segs[1:], ptr+"/"+pointerEscape(segs[0]))
				}
			case []any:
				for i, c := range t {
					if segs[0] == "*" || segs[0] == strconv.Itoa(i) {
						walk(c, segs[1:], ptr+"/"+strconv.Itoa(i))
					}
				}
			case []map[string]any: // TOML arrays of tables
				for i, c := range t {
					if segs[0] == "*" || segs[0] == strconv.Itoa(i) {
						walk(c, segs[1:], ptr+"/"+strconv.Itoa(i))
					}
				}
			}
		}
		walk(doc, strings.Split(pat, "."), "")
	}
	return out
}

// collect records v at ptr (canonical JSON), or with a commands prefix
// each string below v that starts with it.
func collect(v any, ptr, commands string, out map[string]string) {
	if commands == "" {
		if empty(v) {
			return // an empty value runs nothing (the agent's own defaults)
		}
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprint(v))
		}
		out[ptr] = string(b)
		return
	}
	switch t := v.(type) {
	case string:
		if strings.HasPrefix(t, commands) {
			out[ptr] = strconv.Quote(t)
		}
	case map[string]any:
		for k, c := range t {
			collect(c, ptr+"/"+pointerEscape(k), commands, out)
		}
	case []any:
		for i, c := range t {
			collect(c, ptr+"/"+strconv.Itoa(i), commands, out)
		}
	case []map[string]any:
		for i, c := range t {
			collect(c, ptr+"/"+strconv.Itoa(i), commands, out)
		}
	}
}

// pointerEscape escapes one JSON pointer segment (RFC 6901).
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// gitCodeKeys are the entries of a git configuration file that are not
// known to be harmless (harmlessGitKey), in file order: key "N name",
// value the value (or "(no value)").
func gitCodeKeys(content []byte) (map[string]string, bool) {
	entries, err := gitconfig.Parse(content)
	if err != nil {
		return nil, false
	}
	// The remotes the file defines: a branch tracking one of them is
	// ordinary work; a branch whose "remote" is a URL or a path pushes
	// to (and runs the hooks of) whatever that names.
	remotes := map[string]bool{".": true}
	for _, e := range entries {
		if e.Section == "remote" && e.HasSub {
			remotes[e.Subsection] = true
		}
	}
	out := map[string]string{}
	n := 0
	for _, e := range entries {
		if harmlessGitKey(e) {
			continue
		}
		if e.Section == "branch" && e.HasSub && (e.Key == "remote" || e.Key == "pushremote") && remotes[e.Value] {
			continue
		}
		v := e.Value
		if e.NoValue {
			v = "(no value)"
		}
		out[fmt.Sprintf("%04d %s", n, e.Name())] = v
		n++
	}
	return out, true
}

// harmlessGitKeys are the git settings that neither run code nor send
// anything elsewhere, and that git (the user's, or the agent's) writes in
// ordinary work: tracking branches, fetch refspecs, the repository's
// format, identity, merge and pull preferences, submodule registration.
// Every other setting of a repository's configuration (core.fsmonitor,
// core.hooksPath, core.sshCommand, filters, diff and merge drivers,
// aliases, credential helpers, remote URLs, url.*.insteadOf, includes,
// http proxies...) counts: a change to one during a run is undone.
var harmlessGitKeys = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true,
	"core.logallrefupdates": true, "core.ignorecase": true, "core.precomposeunicode": true,
	"core.symlinks": true, "core.autocrlf": true, "core.eol": true, "core.safecrlf": true,
	"core.quotepath": true, "core.sparsecheckout": true, "core.sparsecheckoutcone": true,
	"core.untrackedcache": true, "core.splitindex": true, "core.commitgraph": true,
	"core.multipackindex": true, "core.checkstat": true, "core.trustctime": true,
	"core.whitespace": true, "core.compression": true, "core.loosecompression": true,
	"core.abbrev": true, "core.preloadindex": true,
	"user.name": true, "user.email": true, "user.signingkey": true,
	"commit.gpgsign": true, "tag.gpgsign": true,
	"pull.rebase": true, "pull.ff": true, "push.default": true, "push.autosetupremote": true,
	"push.followtags": true, "fetch.prune": true, "fetch.prunetags": true,
	"fetch.writecommitgraph": true, "init.defaultbranch": true,
	"merge.conflictstyle": true, "merge.ff": true, "rebase.autosquash": true,
	"rebase.autostash": true, "rebase.updaterefs": true, "rerere.enabled": true,
	"rerere.autoupdate": true, "diff.algorithm": true, "diff.renames": true,
	"diff.colormoved": true, "status.showuntrackedfiles": true, "gc.auto": true,
	"gc.autopacklimit": true, "maintenance.auto": true, "maintenance.strategy": true,
	"extensions.objectformat": true, "extensions.worktreeconfig": true,
	"extensions.preciousobjects": true, "extensions.partialclone": true,
	"index.version": true, "index.skiphash": true, "feature.manyfiles": true,
	"lfs.repositoryformatversion": true,
}

// harmlessGitSubKeys are the harmless settings of a subsection, by
// section and key: branch.<name>.remote, remote.<name>.fetch, ...
var harmlessGitSubKeys = map[string]bool{
	"branch.merge": true, "branch.rebase": true,
	"branch.description": true, "branch.vscode-merge-base": true,
	"branch.github-pr-owner-number": true,
	"remote.fetch":                  true, "remote.tagopt": true, "remote.prune": true,
	"remote.skipdefaultupdate": true, "remote.promisor": true, "remote.partialclonefilter": true,
	"submodule.url": true, "submodule.active": true, "submodule.branch": true,
	"color.branch": true, "color.diff": true, "color.status": true,
}

func harmlessGitKey(e gitconfig.Entry) bool {
	switch {
	case e.Section == "color" || e.Section == "column" || e.Section == "advice":
		return true
	case e.HasSub:
		return harmlessGitSubKeys[e.Section+"."+e.Key]
	}
	return harmlessGitKeys[e.Section+"."+e.Key]
}

// maxDepth bounds the nesting of the JSON and TOML documents decoded.
const maxDepth = 200

// nesting is how deep brackets and braces nest in b, a document in format
// f, outside its strings and comments (JSON with comments: "..." strings,
// // and /* */ comments; TOML: "..." and '...' strings, # comments). What
// it cannot tell apart it counts as nesting: it never counts less than a
// parser would meet.
func nesting(f Format, b []byte) int {
	depth, max := 0, 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"' || (c == '\'' && f == FormatTOML):
			i = skipString(b, i, c)
		case lineComment(f, b, i):
			i = skipLine(b, i)
		case c == '/' && f == FormatJSON && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return max
			}
			i += 2 + end + 1
		case c == '[' || c == '{':
			depth++
			if depth > max {
				max = depth
			}
		case c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return max
}

// skipString returns the index of the quote that closes the string
// opened by quote at b[i] (len(b) or more when none does); a backslash
// escapes the next byte in a basic ("...") string.
func skipString(b []byte, i int, quote byte) int {
	for i++; i < len(b) && b[i] != quote; i++ {
		if b[i] == '\\' && quote == '"' {
			i++
		}
	}
	return i
}

// lineComment says whether a comment to the end of the line starts at
// b[i]: # in TOML, // in JSON with comments.
func lineComment(f Format, b []byte, i int) bool {
	c := b[i]
	return (c == '#' && f == FormatTOML) || (c == '/' && f == FormatJSON && i+1 < len(b) && b[i+1] == '/')
}

// skipLine returns the index of the newline that ends the line at b[i],
// or len(b).
func skipLine(b []byte, i int) int {
	for i < len(b) && b[i] != '\n' {
		i++
	}
	return i
}

// empty says whether v is a value that runs nothing and says nothing: null,
// false, "", an empty object or array (what an agent writes as its
// defaults).
func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}
