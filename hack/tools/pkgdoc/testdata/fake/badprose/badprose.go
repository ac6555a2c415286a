// Package badprose names other.Missing in prose.
package badprose

// T is a type with one field.
type T struct{ F int }
