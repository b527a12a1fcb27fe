//go:build !linux

package landlock

import "errors"

// SeedStats counts what one seeding did (Linux only).
type SeedStats struct{ Files, Bytes, Reflinked, Same, Skipped int64 }

// seedCache is Linux's: the weaker sandbox exists only there.
func seedCache(src, dst string) (SeedStats, error) {
	return SeedStats{}, errors.New("the weaker sandbox's caches are Linux-only")
}

// seedCacheLocked is Linux's too.
func seedCacheLocked(lock, src, dst string) (SeedStats, error) { return seedCache(src, dst) }
