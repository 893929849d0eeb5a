//go:build !race

package lua

// raceDetector: the race detector makes fmt and sync.Pool allocate more.
const raceDetector = false
