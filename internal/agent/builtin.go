package agent

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
)

//go:embed builtin
var builtinFS embed.FS

// BuiltinNames lists the built-in agents, sorted.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(builtinFS, "builtin")
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// ErrNoBuiltin is returned (wrapped) by LoadBuiltin for a name that is not
// a built-in agent.
var ErrNoBuiltin = errors.New("no such built-in agent")

// LoadBuiltin loads the built-in agent folder name.
func LoadBuiltin(name string) (*Folder, error) {
	sub, err := fs.Sub(builtinFS, "builtin/"+name)
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrNoBuiltin, name)
	}
	if _, err := fs.Stat(sub, "agent.toml"); err != nil {
		return nil, fmt.Errorf("%w: %q", ErrNoBuiltin, name)
	}
	return load(fsReader(sub), builtinPrefix+name, name, FromBuiltin)
}

// BuiltinFS exposes the built-in folders (for tests and for exporting a
// built-in as a starting point for a custom folder).
func BuiltinFS() fs.FS { sub, _ := fs.Sub(builtinFS, "builtin"); return sub }
