//go:build !race

package gitconfig

// raceDetector is true under go test -race (see race_test.go).
const raceDetector = false
