//go:build !linux

package checkpoint

// repairModes is Linux's (where Landlock lets an agent chmod the store).
func repairModes(stateRoot, dir string, fanout bool) {}

// ownerAccess is Linux's.
func ownerAccess(workdir string) {}
