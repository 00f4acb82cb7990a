//go:build race

package wstls

// raceOn: the race detector is on (its frames are larger).
const raceOn = true
