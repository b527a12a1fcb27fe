package gitconfig

import (
	"errors"
	"strings"
	"testing"
)

func TestExpandPath(t *testing.T) {
	defer func(f func(string) (string, error)) { lookupHome = f }(lookupHome)
	lookupHome = func(name string) (string, error) {
		if name == "bob" {
			return "/home/bob", nil
		}
		return "", errors.New("unknown user")
	}
	for _, tc := range []struct {
		value, base, home, want, err string
	}{
		{"/abs/hooks", "/top", "/home/me", "/abs/hooks", ""},
		{"/abs/../x/./", "/top", "/home/me", "/x", ""},
		{".husky", "/top", "/home/me", "/top/.husky", ""},
		{"../shared.inc", "/repo/.git", "/home/me", "/repo/shared.inc", ""},
		{"~", "/top", "/home/me", "/home/me", ""},
		{"~/", "/top", "/home/me/", "/home/me", ""},
		{"~/g/inc", "/top", "/home/me", "/home/me/g/inc", ""},
		{"~bob", "/top", "/home/me", "/home/bob", ""},
		{"~bob/hooks", "/top", "/home/me", "/home/bob/hooks", ""},
		{"a~/b", "/top", "/home/me", "/top/a~/b", ""},
		{"%(prefix)", "/top", "/home/me", "/top/%(prefix)", ""},
		{"%(prefix)/share/x", "/top", "/home/me", "", "prefix"},
		{"~eve/x", "/top", "/home/me", "", `user "eve"`},
		{"~/x", "/top", "", "", "no home directory"},
		{"x", "", "/home/me", "", "relative"},
		{"", "/top", "/home/me", "", "empty path"},
	} {
		got, err := ExpandPath(tc.value, tc.base, tc.home)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ExpandPath(%q, %q, %q) = %q, %v; want %q", tc.value, tc.base, tc.home, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ExpandPath(%q, %q, %q) = %q, %v; want an error about %s", tc.value, tc.base, tc.home, got, err, tc.err)
		}
	}
}
