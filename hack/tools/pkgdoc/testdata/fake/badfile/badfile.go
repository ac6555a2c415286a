// Package badfile names missing.go, a file it does not have.
package badfile

// T is a type with one field.
type T struct{ F int }
