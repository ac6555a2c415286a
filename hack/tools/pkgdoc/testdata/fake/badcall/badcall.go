// Package badcall calls Missing( in prose.
package badcall

// T is a type with one field.
type T struct{ F int }
