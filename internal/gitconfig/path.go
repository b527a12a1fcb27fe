package gitconfig

import (
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"strings"
)

// lookupHome finds a user's home directory for "~user/"; a variable so
// that tests need no particular account.
var lookupHome = func(name string) (string, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return "", err
	}
	return u.HomeDir, nil
}

// ExpandPath turns the value of a path-valued setting (core.hooksPath,
// include.path, includeIf.*.path, ...) into an absolute, clean path the
// way git 2.39's interpolate_path and its callers do:
//
//   - "~" and "~/rest" are home + rest (home is $HOME for git; "" is an
//     error, as git fails without HOME);
//   - "~user" and "~user/rest" are that user's home directory (from the
//     password database, as getpwnam; an unknown user is an error, as git
//     dies "failed to expand user dir");
//   - "%(prefix)/rest" is relative to git's runtime prefix, which only the
//     installed git knows: an error;
//   - an absolute path is kept;
//   - any other path is joined to base: for include.path and
//     includeIf.*.path the directory of the file that has the include, for
//     core.hooksPath the working tree's top level (where git runs hooks),
//     or the git directory of a bare repository. An empty base is an
//     error.
//
// An empty value is an error: git gives it a meaning of its own per
// setting (2.39 looks for hooks in "/" with an empty core.hooksPath, and
// reads the including file's directory for an empty include.path).
// Cleaning removes "..", lexically: the caller must mind symbolic links.
func ExpandPath(value, base, home string) (string, error) {
	if value == "" {
		return "", errors.New("empty path")
	}
	if strings.HasPrefix(value, "%(prefix)/") {
		return "", fmt.Errorf("path %q: %%(prefix)/ is git's installation prefix, not known here", value)
	}
	p := value
	if value[0] == '~' {
		user, rest, _ := strings.Cut(value[1:], "/")
		dir := home
		if user == "" {
			if home == "" {
				return "", fmt.Errorf("path %q: no home directory", value)
			}
		} else {
			h, err := lookupHome(user)
			if err != nil {
				return "", fmt.Errorf("path %q: home directory of user %q: %w", value, user, err)
			}
			dir = h
		}
		p = dir
		if len(value) > 1+len(user) {
			p += "/" + rest
		}
	}
	if !filepath.IsAbs(p) {
		if base == "" {
			return "", fmt.Errorf("path %q: relative, and no directory to resolve it from", value)
		}
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), nil
}
