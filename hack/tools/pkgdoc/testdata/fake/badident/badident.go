// Package badident names `Missing`, which it does not declare.
package badident

// T is a type with one field.
type T struct{ F int }
