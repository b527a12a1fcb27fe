package uniq

import (
	"slices"
	"testing"
)

func TestOrdered(t *testing.T) {
	in := []string{"b", "a", "b", "c", "a"}
	if got := Ordered(in); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Errorf("Ordered = %q", got)
	}
	if !slices.Equal(in, []string{"b", "a", "b", "c", "a"}) {
		t.Errorf("input modified: %q", in)
	}
	if got := Ordered[int](nil); got == nil || len(got) != 0 {
		t.Errorf("Ordered(nil) = %#v, want empty and not nil", got)
	}
}

func TestSorted(t *testing.T) {
	in := []int{3, 1, 3, 2, 1}
	if got := Sorted(in); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("Sorted = %v", got)
	}
	if !slices.Equal(in, []int{3, 1, 3, 2, 1}) {
		t.Errorf("input modified: %v", in)
	}
	if got := Sorted[string](nil); got == nil || len(got) != 0 {
		t.Errorf("Sorted(nil) = %#v, want empty and not nil", got)
	}
}
