package agent

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// tomlSchema is the TOML type of each key of agent.toml (md.Type's names);
// keys of set_env are strings.
var tomlSchema = map[string]string{
	"command": "String", "args": "Array", "description": "String",
	"config_paths": "Array", "read_paths": "Array", "env": "Array", "set_env": "Table",
	"exec_paths": "Array", "allow_edit": "Array", "loopback_env": "Array", "sbx": "Table",
	"sbx.install": "String", "sbx.version_command": "Array", "sbx.home": "String",
	"code_paths": "Array", "code_keys": "ArrayHash",
	"code_keys.file": "String", "code_keys.keys": "Array", "code_keys.commands": "String",
	"memory_max": "String", "expected_refusals": "Array", "checkpoint": "String",
}

// typeWords are TOML types as a message says them.
var typeWords = map[string]string{
	"String": "a string", "Integer": "an integer", "Float": "a float", "Boolean": "a boolean",
	"Array": "an array", "Table": "a table", "Datetime": "a date-time", "DatetimeLocal": "a date-time",
	"DateLocal": "a date", "TimeLocal": "a time", "ArrayHash": "an array of tables", "Hash": "a table",
}

func want(key string) string {
	t := tomlSchema[key]
	if t == "Array" {
		return "an array of strings"
	}
	if key == "set_env" {
		return "a table of strings"
	}
	if key == "code_keys" {
		return "an array of tables ([[code_keys]])"
	}
	return typeWords[t]
}

func expected(key string) (string, bool) {
	if strings.HasPrefix(key, "set_env.") {
		return "String", true
	}
	t, ok := tomlSchema[key]
	return t, ok
}

// checkTypes refuses a key whose TOML type is not the schema's (the
// decoder drops some mismatches silently, such as an array for set_env).
func checkTypes(md toml.MetaData) error {
	for _, k := range md.Keys() {
		key := k.String()
		exp, ok := expected(key)
		if !ok {
			continue // unknown keys are reported by name
		}
		got := norm(md.Type(k...))
		if exp == "ArrayHash" && got == "Array" {
			continue // an empty array (a non-empty one of non-tables fails to decode)
		}
		if got != exp {
			return fmt.Errorf("%s: want %s, got %s", key, wantOf(key), word(got))
		}
	}
	return nil
}

// norm names a table "Table" however it was written ([x], x = {...}).
func norm(t string) string {
	if t == "Hash" {
		return "Table"
	}
	return t
}

func wantOf(key string) string {
	if strings.HasPrefix(key, "set_env.") {
		return "a string"
	}
	return want(key)
}

func word(t string) string {
	if w, ok := typeWords[t]; ok {
		return w
	}
	return strings.ToLower(t)
}

var decodeErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): `)

// typeError rewrites the decoder's error for a value of the wrong type
// (which names Go types) in TOML's words, with the line; other errors are
// returned unchanged. raw is the document, decoded again without a schema
// to learn the value's TOML type. path names the file: "path:LINE: key: ...".
func typeError(path string, err error, raw string) error {
	m := decodeErr.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	line, key := m[1], m[2]
	if _, ok := expected(key); !ok {
		return fmt.Errorf("%s: %v", path, err)
	}
	var any map[string]any
	md, derr := toml.Decode(raw, &any)
	if derr != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	got := norm(md.Type(strings.Split(key, ".")...))
	if exp, _ := expected(key); got == exp && exp == "Array" {
		return fmt.Errorf("%s:%s: %s: want %s, got an element that is not a string", path, line, key, wantOf(key))
	}
	return fmt.Errorf("%s:%s: %s: want %s, got %s", path, line, key, wantOf(key), word(got))
}
