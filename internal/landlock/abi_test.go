package landlock

import "testing"

// TestFeatures: the table is ordered oldest first, within the ABIs this
// package knows, one row per version.
func TestFeatures(t *testing.T) {
	prev := 0
	for _, f := range Features {
		if f.ABI <= prev || f.ABI > MaxKnownABI || f.What == "" {
			t.Errorf("row %+v after ABI %d (MaxKnownABI %d)", f, prev, MaxKnownABI)
		}
		prev = f.ABI
	}
	if Features[0].ABI != ABIFilesystem {
		t.Errorf("first row %+v, want ABI %d", Features[0], ABIFilesystem)
	}
}
