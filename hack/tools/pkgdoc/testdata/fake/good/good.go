// Package good names only what exists: good.go, `Thing`, `Thing.Do`,
// `Thing.Field`, `Run()`, `other.Name`, other.Name and Thing.Do in prose,
// Run( called, a path from the root (good/good.go), and what it cannot
// check and so leaves alone: `time.Duration`, status.pause, napwake.dev,
// `kubectl napwake wake`, spec.wake.mode, `nil`.
package good

import "example.com/fake/other"

// Thing is a type.
type Thing struct{ Field int }

// Do is a method.
func (Thing) Do() {}

// Run is a function.
func Run() string { return other.Name }
