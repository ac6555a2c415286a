// Package badqual names `other.Missing`, which package other does not declare.
package badqual

// T is a type with one field.
type T struct{ F int }
