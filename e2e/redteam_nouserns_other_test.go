//go:build !linux

package e2e

// seccompNoUserns is Linux's (a seccomp filter): none here.
func seccompNoUserns() (prefix, env []string) { return nil, nil }
