package guard

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// diffKeys lists, sorted, what differs between two codeKeys maps: each
// setting added, changed or removed, with its value (quoted: the agent
// chose it).
func diffKeys(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("added %s = %s", keyName(k), quote(v)))
		} else if w != v {
			out = append(out, fmt.Sprintf("changed %s to %s", keyName(k), quote(v)))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, fmt.Sprintf("removed %s", keyName(k)))
		}
	}
	sort.Strings(out)
	return out
}

// keyName turns a codeKeys key into what a user reads: the git setting's
// name, or the JSON pointer as dotted keys.
func keyName(k string) string {
	if i := strings.IndexByte(k, ' '); i == 4 && !strings.HasPrefix(k, "/") {
		return k[i+1:]
	}
	parts := strings.Split(strings.TrimPrefix(k, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return strings.Join(parts, ".")
}

// maxShown bounds the characters of a value a message shows.
const maxShown = 160

// quote is s as a message shows a value the agent chose: quoted (control
// characters escaped, so that none can rewrite the terminal) and cut.
func quote(s string) string {
	if len(s) > maxShown {
		s = s[:maxShown] + "..."
	}
	return strconv.Quote(s)
}
