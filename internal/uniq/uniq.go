// Package uniq removes duplicates from lists: the one order-preserving
// dedupe (and its sorted variant) that plan, posture, the backends and
// doctor share.
package uniq

import (
	"cmp"
	"slices"
)

// Ordered returns the distinct elements of in, each at its first place.
// The result is never nil, and in is not modified.
func Ordered[T comparable](in []T) []T {
	seen := make(map[T]bool, len(in))
	out := make([]T, 0, len(in))
	for _, x := range in {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// Sorted returns the distinct elements of in, sorted. The result is never
// nil, and in is not modified.
func Sorted[T cmp.Ordered](in []T) []T {
	out := slices.Clone(in)
	if out == nil {
		out = []T{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
