//go:build !linux

package session

import "time"

// waitPidfd is Linux's: elsewhere Wait polls.
func waitPidfd(int, time.Time) bool { return false }
