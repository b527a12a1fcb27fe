package worktree

import (
	"fmt"
	"strings"
)

// CheckName refuses a branch name that git would refuse
// (git-check-ref-format(1) applied to refs/heads/NAME, the rules a branch
// name must follow), and one that starts with '-' (git would take it for
// an option). The error names the value and the rule.
func CheckName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("--worktree=%q: %s; a branch name such as agent/fix-tests", name, why)
	}
	switch {
	case name == "":
		return bad("the branch name is empty")
	case name == "@":
		return bad("\"@\" alone is not a branch name")
	case strings.HasPrefix(name, "-"):
		return bad("a branch name cannot start with '-'")
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return bad("a branch name cannot start or end with '/'")
	case strings.HasSuffix(name, "."):
		return bad("a branch name cannot end with '.'")
	case strings.Contains(name, ".."):
		return bad("a branch name cannot contain \"..\"")
	case strings.Contains(name, "@{"):
		return bad("a branch name cannot contain \"@{\"")
	case strings.Contains(name, "//"):
		return bad("a branch name cannot contain \"//\"")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad(fmt.Sprintf("a branch name cannot contain %q", r))
		}
	}
	for _, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") {
			return bad(fmt.Sprintf("the component %q starts with '.'", c))
		}
		if strings.HasSuffix(c, ".lock") {
			return bad(fmt.Sprintf("the component %q ends with \".lock\"", c))
		}
	}
	return nil
}

// dirName is the name of a run's directory in the project's store for the
// branch name: '%' and '/' escaped, so that one branch's directory never
// lies inside another's ("a" and "a/b" are two sibling directories).
func dirName(branch string) string {
	return strings.ReplaceAll(strings.ReplaceAll(branch, "%", "%25"), "/", "%2F")
}

// branchOf is dirName's inverse.
func branchOf(dir string) string {
	return strings.ReplaceAll(strings.ReplaceAll(dir, "%2F", "/"), "%25", "%")
}
