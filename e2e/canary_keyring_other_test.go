//go:build !linux

package e2e

import "testing"

// keyringCanary needs Linux kernel keyrings; elsewhere the case skips.
func keyringCanary(t *testing.T, payload string) string {
	t.Helper()
	t.Skip("kernel keyrings are Linux only")
	return ""
}
