//go:build !linux

package main

import (
	"errors"

	"github.com/agent-sandbox/agent-sandbox/internal/session"
)

// isTerminal reports false: exec gives a command a terminal of its own on
// Linux only (the namespace view's sessions).
func isTerminal(int) bool { return false }

// errNoTTYHere is exec -t's refusal off Linux.
var errNoTTYHere = errors.New("exec -t: a terminal of the command's own needs Linux (the namespace view); run without -t")

// execWithTTY refuses: see errNoTTYHere.
func execWithTTY(*session.Client, []string) (int, error) { return 0, errNoTTYHere }
