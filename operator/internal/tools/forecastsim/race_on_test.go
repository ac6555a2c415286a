//go:build race

package main

// raceEnabled: the race detector slows the goal run tenfold.
const raceEnabled = true
