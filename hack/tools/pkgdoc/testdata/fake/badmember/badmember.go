// Package badmember names `T.Missing`, no method or field of T.
package badmember

// T is a type with one field.
type T struct{ F int }
