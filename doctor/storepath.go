package doctor

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"
)

// storePathRe matches a Nix store path, /nix/store/<32 nixbase32
// characters>-<name>, and any path inside it. Characters that cannot occur
// in store path names (quotes, spaces, commas, colons) end the match.
var storePathRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`/nix/store/[0-9a-df-np-sv-z]{32}-[0-9A-Za-z+._?=-]+(?:/[0-9A-Za-z+._?=@%~-]+)*`)
})

// storeRoot returns the store path itself, /nix/store/<hash>-<name>, of a
// path inside it.
func storeRoot(p string) string {
	rest := strings.TrimPrefix(p, "/nix/store/")
	name, _, _ := strings.Cut(rest, "/")
	return "/nix/store/" + name
}

// stringAt is one string value of a parsed file and where it is.
type stringAt struct {
	key   string // key path, e.g. exec_paths[0] or filesystem.read[2]
	value string
	line  int // 0 when unknown
}

// storeRef is one store path named by a file.
type storeRef struct {
	path  string
	keys  []string // key paths of the values that contain it; none for a comment
	value string   // the first such value
	lines []int
}

// findStorePaths lists the store paths named in a file: in its string values
// (attributed to their keys) and anywhere else in its raw text (comments,
// or a file that did not parse). raw may be nil.
func findStorePaths(raw []byte, values []stringAt) []storeRef {
	var order []string
	refs := map[string]*storeRef{}
	get := func(p string) *storeRef {
		if refs[p] == nil {
			refs[p] = &storeRef{path: p}
			order = append(order, p)
		}
		return refs[p]
	}
	addLine := func(ref *storeRef, line int) {
		if line > 0 && !slices.Contains(ref.lines, line) {
			ref.lines = append(ref.lines, line)
		}
	}
	for _, v := range values {
		for _, p := range storePathRe().FindAllString(v.value, -1) {
			ref := get(p)
			if !slices.Contains(ref.keys, v.key) {
				ref.keys = append(ref.keys, v.key)
			}
			if ref.value == "" {
				ref.value = v.value
			}
			addLine(ref, v.line)
		}
	}
	for _, loc := range storePathRe().FindAllIndex(raw, -1) {
		addLine(get(string(raw[loc[0]:loc[1]])), lineOf(raw, loc[0]))
	}
	out := make([]storeRef, 0, len(order))
	for _, p := range order {
		slices.Sort(refs[p].lines)
		out = append(out, *refs[p])
	}
	return out
}

func lineOf(src []byte, off int) int {
	return 1 + strings.Count(string(src[:off]), "\n")
}

// tomlStrings lists the string values of a TOML document with their key
// paths; nil when it does not parse (the raw scan still sees it).
func tomlStrings(raw []byte) []stringAt {
	var m map[string]any
	if _, err := toml.Decode(string(raw), &m); err != nil {
		return nil
	}
	var out []stringAt
	walkValue("", m, func(key, s string) { out = append(out, stringAt{key: key, value: s}) })
	return out
}

func walkValue(key string, v any, emit func(key, s string)) {
	switch v := v.(type) {
	case string:
		emit(key, v)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			walkValue(joinKey(key, k), v[k], emit)
		}
	case []any:
		for i, e := range v {
			walkValue(key+"["+strconv.Itoa(i)+"]", e, emit)
		}
	case []map[string]any:
		for i, e := range v {
			walkValue(key+"["+strconv.Itoa(i)+"]", e, emit)
		}
	}
}

func joinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// jsonStrings lists the string values of a HuJSON (or JSON) document with
// their key paths and lines; nil when it does not parse. withLines false
// leaves the lines out (for a document that exists only in memory).
func jsonStrings(raw []byte, withLines bool) []stringAt {
	v, err := hujson.Parse(raw)
	if err != nil {
		return nil
	}
	var out []stringAt
	var walk func(key string, v hujson.Value)
	walk = func(key string, v hujson.Value) {
		switch t := v.Value.(type) {
		case hujson.Literal:
			if t.Kind() == '"' {
				s := stringAt{key: key, value: t.String()}
				if withLines {
					s.line = lineOf(raw, v.StartOffset)
				}
				out = append(out, s)
			}
		case *hujson.Object:
			for _, m := range t.Members {
				name, _ := m.Name.Value.(hujson.Literal)
				walk(joinKey(key, name.String()), m.Value)
			}
		case *hujson.Array:
			for i, e := range t.Elements {
				walk(key+"["+strconv.Itoa(i)+"]", e)
			}
		}
	}
	walk("", v)
	return out
}

// storeProblem says what is wrong with a store path, or "" when it exists.
// Results are cached for the run.
func (r *run) storeProblem(p string) string {
	err, seen := r.exists[p]
	if !seen {
		_, err = os.Stat(r.storeFS + p)
		r.exists[p] = err
	}
	if err == nil {
		return ""
	}
	root := storeRoot(p)
	if _, rootErr := os.Lstat(r.storeFS + root); rootErr != nil {
		return fmt.Sprintf("store path %s does not exist: a stale store path (garbage-collected, or rendered from an older nixpkgs)", root)
	}
	if os.IsNotExist(err) {
		return fmt.Sprintf("%s does not exist inside store path %s", p, root)
	}
	return fmt.Sprintf("%s: %v", p, err)
}

// describeRef names where a store path was found: file[:line], the keys and
// the value.
func describeRef(file string, ref storeRef) string {
	loc := file
	if len(ref.lines) > 0 {
		loc += ":" + strconv.Itoa(ref.lines[0])
	}
	if len(ref.keys) == 0 {
		return fmt.Sprintf("%s: %s (outside any value, e.g. in a comment)", loc, ref.path)
	}
	return fmt.Sprintf("%s: %s = %q", loc, strings.Join(ref.keys, ", "), ref.value)
}
