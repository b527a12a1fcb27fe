//go:build race

package gitconfig

// raceDetector is true under go test -race, which slows Parse tenfold:
// timing assertions are off then.
const raceDetector = true
