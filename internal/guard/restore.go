package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// restoreJSON returns cur with the values at each JSON pointer of ptrs put
// back to what they are in base (added where base has them and cur does
// not, removed where cur has them and base does not), everything else of
// cur kept as it is, comments and layout included.
func restoreJSON(base, cur []byte, ptrs []string) ([]byte, error) {
	baseDoc, err := decodeJSON(base)
	if err != nil {
		return nil, err
	}
	v, err := hujson.Parse(append([]byte(nil), cur...))
	if err != nil {
		return nil, err
	}
	// Parents before children: once a parent is put back whole, what
	// lies below it is right already.
	sort.Slice(ptrs, func(i, j int) bool { return len(ptrs[i]) < len(ptrs[j]) })
	for _, p := range ptrs {
		curDoc, err := decodeJSON(v.Pack())
		if err != nil {
			return nil, err
		}
		bv, inBase := lookup(baseDoc, p)
		_, inCur := lookup(curDoc, p)
		var op map[string]any
		switch {
		case inBase && inCur:
			op = map[string]any{"op": "replace", "path": p, "value": bv}
		case inBase:
			// Add at the first level below what cur has.
			q := p
			for {
				parent := q[:strings.LastIndexByte(q, '/')]
				if _, ok := lookup(curDoc, parent); ok || parent == "" {
					break
				}
				q = parent
			}
			qv, _ := lookup(baseDoc, q)
			parent, _ := lookup(curDoc, q[:strings.LastIndexByte(q, '/')])
			if _, isArray := parent.([]any); isArray {
				op = map[string]any{"op": "add", "path": q[:strings.LastIndexByte(q, '/')] + "/-", "value": qv}
			} else {
				op = map[string]any{"op": "add", "path": q, "value": qv}
			}
		case inCur:
			op = map[string]any{"op": "remove", "path": p}
		default:
			continue
		}
		b, err := json.Marshal([]any{op})
		if err != nil {
			return nil, err
		}
		if err := v.Patch(b); err != nil {
			return nil, fmt.Errorf("putting back %s: %w", p, err)
		}
	}
	return v.Pack(), nil
}

func decodeJSON(b []byte) (any, error) {
	doc, ok := protect.DecodeDoc(protect.FormatJSON, b)
	if !ok {
		return nil, errors.New("not valid JSON")
	}
	return doc, nil
}

// lookup returns the value at the JSON pointer p in doc.
func lookup(doc any, p string) (any, bool) {
	if p == "" {
		return doc, true
	}
	if !strings.HasPrefix(p, "/") {
		return nil, false
	}
	cur := doc
	for _, seg := range strings.Split(p[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case map[string]any:
			c, ok := t[seg]
			if !ok {
				return nil, false
			}
			cur = c
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			cur = t[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// errTooLarge is a file the audit cannot restore: larger than a snapshot
// keeps.
var errTooLarge = errors.New("too large to keep a copy of")
