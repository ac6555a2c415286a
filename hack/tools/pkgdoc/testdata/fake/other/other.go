// Package other declares Name, which good names.
package other

// Name is named by good's doc.
const Name = "other"
