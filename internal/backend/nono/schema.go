package nono

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// SchemaMissing checks a nono profile JSON schema (what `nono profile
// schema` prints) against the keys agent-sandbox writes: every JSON name of
// Profile, and of the objects inside it, must be a property the schema
// declares at that place, since nono rejects unknown keys. It returns the
// missing keys as dotted paths ("network.open_port"), sorted; an error when
// the schema is not a JSON object with properties.
func SchemaMissing(schema []byte) ([]string, error) {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %v", err)
	}
	if _, ok := root["properties"].(map[string]any); !ok {
		return nil, fmt.Errorf("the schema has no top-level \"properties\"")
	}
	var missing []string
	walkSchema(root, root, reflect.TypeOf(Profile{}), "", &missing)
	sort.Strings(missing)
	return missing, nil
}

// walkSchema checks the JSON names of struct type t against node's
// properties, recursing into nested structs.
func walkSchema(root, node map[string]any, t reflect.Type, prefix string, missing *[]string) {
	props, _ := resolveSchema(root, node)["properties"].(map[string]any)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		prop, ok := props[name].(map[string]any)
		if !ok {
			*missing = append(*missing, prefix+name)
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			walkSchema(root, prop, ft, prefix+name+".", missing)
		}
	}
}

// resolveSchema follows a "$ref" to "#/$defs/..." (or "#/definitions/..."),
// or the first "oneOf"/"anyOf" branch that resolves to an object with
// properties, and returns the node itself otherwise.
func resolveSchema(root, node map[string]any) map[string]any {
	for depth := 0; depth < 16; depth++ {
		if _, ok := node["properties"]; ok {
			return node
		}
		if ref, ok := node["$ref"].(string); ok {
			next := lookupRef(root, ref)
			if next == nil {
				return node
			}
			node = next
			continue
		}
		for _, key := range []string{"oneOf", "anyOf", "allOf"} {
			branches, _ := node[key].([]any)
			for _, b := range branches {
				if bm, ok := b.(map[string]any); ok {
					if r := resolveSchema(root, bm); r["properties"] != nil {
						return r
					}
				}
			}
		}
		return node
	}
	return node
}

// lookupRef resolves a local JSON pointer such as "#/$defs/NetworkConfig".
func lookupRef(root map[string]any, ref string) map[string]any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	m, _ := cur.(map[string]any)
	return m
}
